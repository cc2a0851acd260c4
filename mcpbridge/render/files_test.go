package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// testSandbox is the SandboxID of the results of these tests.
const testSandbox = "sb-1"

// A fakeFiles is a sandbox's files out for RichOf: each path holds its
// bytes ([]byte) or the error opening it fails with (error).
type fakeFiles struct {
	files  map[string]any
	mu     sync.Mutex
	opened []string
}

// open is an Opener that behaves as entrypoint.Session.OpenFile.
func (f *fakeFiles) open(ctx context.Context, sandboxID, p string, max int64) (io.ReadCloser, int64, error) {
	f.mu.Lock()
	f.opened = append(f.opened, p)
	f.mu.Unlock()
	if sandboxID != testSandbox {
		return nil, 0, entrypoint.ErrSandboxGone
	}
	switch v := f.files[p].(type) {
	case error:
		return nil, 0, v
	case []byte:
		if max > 0 && int64(len(v)) > max {
			return nil, 0, fmt.Errorf("%w: %d bytes, limit %d", engine.ErrFileTooLarge, len(v), max)
		}
		return io.NopCloser(bytes.NewReader(v)), int64(len(v)), nil
	}
	return nil, 0, fmt.Errorf("opening %s: %w", p, fs.ErrNotExist)
}

// result returns a Result of the sandbox testSandbox listing the files
// of f in order, with their sizes.
func (f *fakeFiles) result(paths ...string) *entrypoint.Result {
	res := &entrypoint.Result{Status: entrypoint.StatusSuccess, SandboxID: testSandbox}
	for _, p := range paths {
		size := int64(1)
		if b, ok := f.files[p].([]byte); ok {
			size = int64(len(b))
		}
		res.Files = append(res.Files, entrypoint.OutFile{Path: p, Size: size})
	}
	return res
}

// pngOf returns a real PNG of at least n bytes (padded after its end).
func pngOf(n int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		panic(err)
	}
	if pad := n - b.Len(); pad > 0 {
		b.Write(make([]byte, pad))
	}
	return b.Bytes()
}

// kinds describes content for comparisons: image:<mime>,
// text:<uri>:<mime>, blob:<uri>:<mime>, link:<uri>:<size>.
func kinds(content []mcp.Content) []string {
	var out []string
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			out = append(out, "image:"+c.MIMEType)
		case *mcp.EmbeddedResource:
			kind := "blob"
			if c.Resource.Blob == nil {
				kind = "text"
			}
			out = append(out, kind+":"+c.Resource.URI+":"+c.Resource.MIMEType)
		case *mcp.ResourceLink:
			size := "?"
			if c.Size != nil {
				size = fmt.Sprint(*c.Size)
			}
			out = append(out, "link:"+c.URI+":"+size)
		default:
			out = append(out, fmt.Sprintf("%T", c))
		}
	}
	return out
}

func asOf(files []payloadFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimPrefix(f.Path, entrypoint.OutDir+"/")+"="+f.As)
	}
	return out
}

func TestRichOf(t *testing.T) {
	csv := "a,b\n1,2\n"
	big := bytes.Repeat([]byte("x"), 300<<10)
	ff := &fakeFiles{files: map[string]any{
		"/workspace/out/data.csv":     []byte(csv),
		"/workspace/out/arr.npy":      []byte{0x93, 'N', 'U', 'M', 'P', 'Y', 0, 0xff},
		"/workspace/out/big.parquet":  big,
		"/workspace/out/plots/p.png":  pngOf(100),
		"/workspace/out/fake.png":     []byte("not a png at all"),
		"/workspace/out/notes":        []byte("plain words"),
		"/workspace/out/my file#1.md": []byte("# title\n"),
	}}
	res := ff.result("/workspace/out/data.csv", "/workspace/out/arr.npy", "/workspace/out/big.parquet",
		"/workspace/out/plots/p.png", "/workspace/out/fake.png", "/workspace/out/notes", "/workspace/out/my file#1.md")
	res.Images = []entrypoint.Image{{MIME: "image/svg+xml", Data: []byte("<svg/>")}, {MIME: "image/png", Data: pngOf(0)}}
	res.Notes = []string{"[1 image was not shown: …]"}
	var links FileLinks
	r := RichOf(context.Background(), res, ff.open, &links, 10, 8<<20)
	want := []string{
		"image:image/svg+xml",
		"image:image/png",
		"text:sandbox://files/data.csv:text/csv",
		"blob:sandbox://files/arr.npy:application/octet-stream",
		"link:sandbox://files/big.parquet:307200",
		"image:image/png",
		"blob:sandbox://files/fake.png:image/png",
		"text:sandbox://files/notes:text/plain",
		"text:sandbox://files/my%20file%231.md:text/markdown",
	}
	if got := kinds(r.content); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("content\n%q\nwant\n%q", got, want)
	}
	if got := r.content[2].(*mcp.EmbeddedResource).Resource.Text; got != csv {
		t.Fatalf("CSV text %q", got)
	}
	if got := r.content[3].(*mcp.EmbeddedResource).Resource.Blob; !bytes.Equal(got, ff.files["/workspace/out/arr.npy"].([]byte)) {
		t.Fatalf("blob %q", got)
	}
	if l := r.content[4].(*mcp.ResourceLink); l.Name != "big.parquet" || l.MIMEType != "application/vnd.apache.parquet" {
		t.Fatalf("link %+v", l)
	}
	wantAs := []string{"data.csv=embedded", "arr.npy=embedded", "big.parquet=link", "plots/p.png=image",
		"fake.png=embedded", "notes=embedded", "my file#1.md=embedded"}
	if got := asOf(r.files); fmt.Sprint(got) != fmt.Sprint(wantAs) {
		t.Fatalf("files %q; want %q", got, wantAs)
	}
	for _, f := range r.files {
		if f.URI != fileURI(f.Path) {
			t.Fatalf("file %+v: URI", f)
		}
		l, ok := links.get(f.URI)
		if !ok || l.sandboxID != testSandbox || l.path != f.Path {
			t.Fatalf("link of %s: %+v, %v", f.URI, l, ok)
		}
	}
	if fmt.Sprint(r.notes) != fmt.Sprint(res.Notes) {
		t.Fatalf("notes %q", r.notes)
	}
	for _, p := range ff.opened {
		if p == "/workspace/out/big.parquet" {
			t.Fatal("a file to link was read")
		}
	}
}

// TestRichOfImageLimits shows image files as images while the call's
// image limits allow, what res.Images used counted, and links them past.
func TestRichOfImageLimits(t *testing.T) {
	const n = 1000
	img := entrypoint.Image{MIME: "image/png", Data: pngOf(n)}
	tests := []struct {
		name     string
		shown    int // images the call showed already
		maxCount int
		maxBytes int64
		sizes    []int // of the PNG files
		want     []string
	}{
		{"within", 0, 10, 8 << 20, []int{n, n}, []string{"image", "image"}},
		{"count", 1, 3, 8 << 20, []int{n, n, n}, []string{"image", "image", "link"}},
		{"count used up by the call's own", 2, 2, 8 << 20, []int{n}, []string{"link"}},
		{"no images", 0, 0, 8 << 20, []int{n}, []string{"link"}},
		{"bytes", 1, 10, 2*n + n/2, []int{n, n, 10}, []string{"image", "link", "image"}},
		{"large image within the limits", 0, 10, 8 << 20, []int{2 << 20}, []string{"image"}},
		{"large image past the byte limit", 0, 10, 1 << 20, []int{2 << 20}, []string{"link"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := &fakeFiles{files: map[string]any{}}
			var paths []string
			for i, size := range tt.sizes {
				p := fmt.Sprintf("/workspace/out/p%d.png", i)
				ff.files[p] = pngOf(size)
				paths = append(paths, p)
			}
			res := ff.result(paths...)
			for range tt.shown {
				res.Images = append(res.Images, img)
			}
			r := RichOf(context.Background(), res, ff.open, &FileLinks{}, tt.maxCount, tt.maxBytes)
			var got []string
			images, imgBytes := 0, int64(0)
			for i, f := range r.files {
				got = append(got, f.As)
				if f.As == "image" {
					images++
					imgBytes += int64(len(ff.files[paths[i]].([]byte)))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("files as %q; want %q (content %q)", got, tt.want, kinds(r.content))
			}
			if images+tt.shown > max(tt.maxCount, tt.shown) || imgBytes+int64(tt.shown*n) > max(tt.maxBytes, int64(tt.shown*n)) {
				t.Fatalf("%d images of %d bytes past the limits %d, %d", images, imgBytes, tt.maxCount, tt.maxBytes)
			}
		})
	}
}

// TestRichOfEmbedTotal embeds small files up to 1 MiB in all, and links
// those past it.
func TestRichOfEmbedTotal(t *testing.T) {
	ff := &fakeFiles{files: map[string]any{}}
	var paths []string
	for i, size := range []int{250 << 10, 250 << 10, 250 << 10, 250 << 10, 250 << 10, 24 << 10, 1} {
		p := fmt.Sprintf("/workspace/out/f%d.txt", i)
		ff.files[p] = bytes.Repeat([]byte("a"), size)
		paths = append(paths, p)
	}
	r := RichOf(context.Background(), ff.result(paths...), ff.open, &FileLinks{}, 10, 8<<20)
	// 4 × 250 KiB fit in 1 MiB, the fifth does not; 24 KiB still fit
	// exactly, then nothing does.
	want := []string{"f0.txt=embedded", "f1.txt=embedded", "f2.txt=embedded", "f3.txt=embedded", "f4.txt=link", "f5.txt=embedded", "f6.txt=link"}
	if got := asOf(r.files); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %q; want %q", got, want)
	}
	var embedded int
	for _, c := range r.content {
		if e, ok := c.(*mcp.EmbeddedResource); ok {
			embedded += len(e.Resource.Text) + len(e.Resource.Blob)
		}
	}
	if embedded > embedTotalBytes {
		t.Fatalf("%d bytes embedded", embedded)
	}
}

// TestRichOfUnreadable leaves a file that cannot be read out, with a note.
func TestRichOfUnreadable(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		sandboxID string
		says      string
	}{
		{"symbolic link", fmt.Errorf("opening x: %w: symbolic link to /etc/passwd", engine.ErrNotRegular), testSandbox, "not a regular file"},
		{"removed", fmt.Errorf("copying x: %w", fs.ErrNotExist), testSandbox, "it was removed"},
		{"grew", fmt.Errorf("%w: 9 bytes", engine.ErrFileTooLarge), testSandbox, "grew past its limit"},
		{"sandbox gone", nil, "sb-old", "the sandbox that wrote it is gone"},
		{"other", errors.New("engine hiccup"), testSandbox, "engine hiccup"},
		{"image file", fmt.Errorf("copying x: %w", fs.ErrNotExist), testSandbox, "it was removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := "/workspace/out/sub/x.csv"
			if tt.name == "image file" {
				p = "/workspace/out/sub/x.png"
			}
			ff := &fakeFiles{files: map[string]any{p: tt.err, "/workspace/out/ok.txt": []byte("ok")}}
			if tt.err == nil {
				ff.files[p] = []byte("data")
			}
			res := ff.result(p, "/workspace/out/ok.txt")
			res.SandboxID = tt.sandboxID
			r := RichOf(context.Background(), res, ff.open, &FileLinks{}, 10, 8<<20)
			wantNote := "[file sub/" + p[len("/workspace/out/sub/"):] + " not returned: "
			if len(r.notes) == 0 || !strings.HasPrefix(r.notes[0], wantNote) || !strings.Contains(r.notes[0], tt.says) {
				t.Fatalf("notes %q; want %q…%q", r.notes, wantNote, tt.says)
			}
			for _, f := range r.files {
				if f.Path == p {
					t.Fatalf("the unreadable file is listed: %+v", f)
				}
			}
			for _, k := range kinds(r.content) {
				if strings.Contains(k, "sub/x") {
					t.Fatalf("content of the unreadable file: %q", k)
				}
			}
		})
	}
	if r := RichOf(context.Background(), nil, nil, &FileLinks{}, 10, 8<<20); r.content != nil || r.files != nil || r.notes != nil {
		t.Fatalf("RichOf(nil) = %+v", r)
	}
}

func TestFileURI(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/workspace/out/a.csv", "sandbox://files/a.csv"},
		{"/workspace/out/sub/dir/b.png", "sandbox://files/sub/dir/b.png"},
		{"/workspace/out/my file.csv", "sandbox://files/my%20file.csv"},
		{"/workspace/out/#1/a#b.txt", "sandbox://files/%231/a%23b.txt"},
		{"/workspace/out/q?.txt", "sandbox://files/q%3F.txt"},
		{"/workspace/out/100%.txt", "sandbox://files/100%25.txt"},
		{"/workspace/out/é.txt", "sandbox://files/%C3%A9.txt"},
	}
	for _, tt := range tests {
		if got := fileURI(tt.path); got != tt.want {
			t.Errorf("fileURI(%q) = %q; want %q", tt.path, got, tt.want)
		}
	}
}

func TestFileType(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/workspace/out/a.csv", "text/csv"},
		{"/workspace/out/A.CSV", "text/csv"},
		{"/workspace/out/a.tar.gz", "application/gzip"},
		{"/workspace/out/p.jpeg", "image/jpeg"},
		{"/workspace/out/d.svg", "image/svg+xml"},
		{"/workspace/out/noext", ""},
		{"/workspace/out/.hidden", ""},
	}
	for _, tt := range tests {
		if got := FileType(tt.path); got != tt.want {
			t.Errorf("FileType(%q) = %q; want %q", tt.path, got, tt.want)
		}
	}
}

func TestIsText(t *testing.T) {
	tests := []struct {
		mime string
		data string
		want bool
	}{
		{"text/csv", "a,b", true},
		{"", "words", true},
		{"application/json", "{}", true},
		{"application/x-ipynb+json", "{}", true},
		{"image/svg+xml", "<svg/>", true},
		{"application/yaml", "a: 1", true},
		{"image/png", "looks like text", false},
		{"application/octet-stream", "text", false},
		{"text/plain", "nul\x00byte", false},
		{"text/plain", "bad \xff utf-8", false},
	}
	for _, tt := range tests {
		if got := isText(tt.mime, []byte(tt.data)); got != tt.want {
			t.Errorf("isText(%q, %q) = %v", tt.mime, tt.data, got)
		}
	}
}

func TestContentsOf(t *testing.T) {
	tests := []struct {
		name, mime string
		data       []byte
		text       bool
		wantMIME   string
	}{
		{"empty file", "text/csv", []byte{}, false, "text/csv"},
		{"nil data", "", nil, false, "text/plain; charset=utf-8"},
		{"text of unknown type", "", []byte("hello"), true, "text/plain"},
		{"binary of unknown type", "", []byte{0, 1, 2, 0xff}, false, "application/octet-stream"},
		{"csv", "text/csv", []byte("a,b"), true, "text/csv"},
		{"png", "image/png", []byte("text in a png"), false, "image/png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := ContentsOf("sandbox://files/x", tt.mime, tt.data)
			if rc.URI != "sandbox://files/x" || rc.MIMEType != tt.wantMIME {
				t.Fatalf("%+v; want type %q", rc, tt.wantMIME)
			}
			if tt.text {
				if rc.Blob != nil || rc.Text != string(tt.data) {
					t.Fatalf("text %q blob %v", rc.Text, rc.Blob)
				}
			} else if rc.Blob == nil || !bytes.Equal(rc.Blob, tt.data) || rc.Text != "" {
				t.Fatalf("text %q blob %v; want a blob", rc.Text, rc.Blob)
			}
			// It goes on the wire: an empty blob is a blob, not nothing.
			raw, err := json.Marshal(rc)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.text && !strings.Contains(string(raw), `"blob":`) {
				t.Fatalf("wire form %s has no blob", raw)
			}
		})
	}
}

func TestFileLinks(t *testing.T) {
	var links FileLinks
	if _, ok := links.get("sandbox://files/none"); ok {
		t.Fatal("a link in an empty FileLinks")
	}
	uri := func(i int) string { return fmt.Sprintf("sandbox://files/f%d", i) }
	for i := range keptFileLinks + 5 {
		links.add(uri(i), fileLink{sandboxID: "sb", path: fmt.Sprintf("/workspace/out/f%d", i)})
	}
	for i := range keptFileLinks + 5 {
		l, ok := links.get(uri(i))
		if kept := i >= 5; ok != kept || (ok && l.path != fmt.Sprintf("/workspace/out/f%d", i)) {
			t.Fatalf("link %d: %+v, %v; want kept %v", i, l, ok, kept)
		}
	}
	// A URI reported again takes the new sandbox and is not counted twice.
	links.add(uri(keptFileLinks+4), fileLink{sandboxID: "sb2", path: "/workspace/out/new"})
	if l, _ := links.get(uri(keptFileLinks + 4)); l.sandboxID != "sb2" || len(links.order) != keptFileLinks || len(links.links) != keptFileLinks {
		t.Fatalf("after a repeat: %+v, %d in order, %d links", l, len(links.order), len(links.links))
	}
}

// TestRichPayload renders an outcome with images and files: the
// structured result counts and lists them, the text names the files.
func TestRichPayload(t *testing.T) {
	ff := &fakeFiles{files: map[string]any{
		"/workspace/out/t.csv":      []byte("a,b\n"),
		"/workspace/out/big.bin":    make([]byte, 300<<10),
		"/workspace/out/gone.txt":   fmt.Errorf("x: %w", fs.ErrNotExist),
		"/workspace/out/img/p.webp": []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"),
	}}
	res := ff.result("/workspace/out/t.csv", "/workspace/out/big.bin", "/workspace/out/gone.txt", "/workspace/out/img/p.webp")
	res.Images = []entrypoint.Image{{MIME: "image/png", Data: pngOf(0)}}
	res.Notes = []string{"[2 images were not shown: a call shows at most 1 images and 8 MiB of images]"}
	out := FromSession(res, nil, nil, 0)
	out.rich = RichOf(context.Background(), res, ff.open, &FileLinks{}, 3, 8<<20)
	p := out.payload()
	if p.Images != 2 || len(p.Files) != 3 || len(p.Notes) != 2 || p.Status != "" || p.Summary != "Success" {
		t.Fatalf("payload %+v", p)
	}
	if p.Files[0] != (payloadFile{Path: "/workspace/out/t.csv", Size: 4, MIMEType: "text/csv", URI: "sandbox://files/t.csv", As: "embedded"}) {
		t.Fatalf("file %+v", p.Files[0])
	}
	if !strings.HasPrefix(p.Notes[1], "[file gone.txt not returned: it was removed") {
		t.Fatalf("notes %q", p.Notes)
	}
	text := out.compactText()
	wantText := "Success\n" +
		"files out: t.csv (4 bytes, embedded), big.bin (300 KiB, link), img/p.webp (34 bytes, image)\n" +
		res.Notes[0] + "\n" + p.Notes[1]
	if text != wantText {
		t.Fatalf("text\n%s\nwant\n%s", text, wantText)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"images":2`) || !strings.Contains(string(raw), `"as":"link"`) {
		t.Fatalf("wire payload %s", raw)
	}
	tr := out.Result(Compact)
	if len(tr.Content) != 1+4 || tr.IsError {
		t.Fatalf("tool result content %q", kinds(tr.Content))
	}
	// Nothing printed, no images nor files: no files line, "no output".
	plain := FromSession(&entrypoint.Result{Status: entrypoint.StatusSuccess}, nil, nil, 0)
	plain.rich = RichOf(context.Background(), &entrypoint.Result{Status: entrypoint.StatusSuccess}, ff.open, &FileLinks{}, 3, 8<<20)
	if text := plain.compactText(); text != "Success (no output)" {
		t.Fatalf("plain text %q", text)
	}
}

// TestAddQuery appends a handle's query to the URIs of the files out,
// in the payload and in the content, and to no other URI.
func TestAddQuery(t *testing.T) {
	ff := &fakeFiles{files: map[string]any{
		"/workspace/out/t.csv":   []byte("a,b\n"),
		"/workspace/out/big.bin": make([]byte, 300<<10),
	}}
	res := ff.result("/workspace/out/t.csv", "/workspace/out/big.bin")
	res.Images = []entrypoint.Image{{MIME: "image/png", Data: pngOf(0)}}
	r := RichOf(context.Background(), res, ff.open, &FileLinks{}, 3, 8<<20)
	r.AddQuery("?session=h1")
	want := []string{"image:image/png", "text:sandbox://files/t.csv?session=h1:text/csv", "link:sandbox://files/big.bin?session=h1:307200"}
	if got := kinds(r.content); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("content\n%q\nwant\n%q", got, want)
	}
	for _, f := range r.files {
		if !strings.HasSuffix(f.URI, "?session=h1") {
			t.Fatalf("file %+v", f)
		}
	}
}

// TestFileLinksRead serves a file out a session's call reported, as it
// is now; a file never reported, removed since, or whose sandbox is gone
// is not found.
func TestFileLinksRead(t *testing.T) {
	ff := &fakeFiles{files: map[string]any{
		"/workspace/out/t.csv":    []byte("a,b\n"),
		"/workspace/out/gone.txt": []byte("x"),
	}}
	var links FileLinks
	RichOf(context.Background(), ff.result("/workspace/out/t.csv", "/workspace/out/gone.txt"), ff.open, &links, 3, 8<<20)
	ctx := context.Background()
	got, err := links.Read(ctx, ff.open, "sandbox://files/t.csv")
	if err != nil || got.Contents[0].Text != "a,b\n" || got.Contents[0].MIMEType != "text/csv" {
		t.Fatalf("read: %+v, %v", got, err)
	}
	delete(ff.files, "/workspace/out/gone.txt")
	for _, uri := range []string{"sandbox://files/gone.txt", "sandbox://files/never.txt"} {
		var je *jsonrpc.Error
		if _, err := links.Read(ctx, ff.open, uri); !errors.As(err, &je) || !strings.Contains(string(je.Data), uri) {
			t.Fatalf("read %s: %v; want not found", uri, err)
		}
	}
	links.add("sandbox://files/other", fileLink{sandboxID: "sb-gone", path: "/workspace/out/t.csv"})
	if _, err := links.Read(ctx, ff.open, "sandbox://files/other"); err == nil {
		t.Fatal("read a file of a sandbox that is gone")
	}
}
