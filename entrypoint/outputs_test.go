package entrypoint

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"
	"testing"
)

// testImages are minimal real images of each type an image frame may
// carry, keyed by MIME type.
var testImages = func() map[string][]byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var p, j, g bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		panic(err)
	}
	if err := jpeg.Encode(&j, img, nil); err != nil {
		panic(err)
	}
	if err := gif.Encode(&g, img, nil); err != nil {
		panic(err)
	}
	return map[string][]byte{
		"image/png":  p.Bytes(),
		"image/jpeg": j.Bytes(),
		"image/gif":  g.Bytes(),
		// A 1×1 lossless WebP (no encoder in the standard library).
		"image/webp":    []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"),
		"image/svg+xml": []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><text>é</text></svg>`),
	}
}()

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestDecodeImage(t *testing.T) {
	for mime, data := range testImages {
		t.Run(mime, func(t *testing.T) {
			img, err := decodeImage(mime, b64(data))
			if err != nil {
				t.Fatal(err)
			}
			if img.MIME != mime || !bytes.Equal(img.Data, data) {
				t.Fatalf("decodeImage = %q, %d bytes; want %q, %d bytes", img.MIME, len(img.Data), mime, len(data))
			}
			if !IsImage(mime, data) {
				t.Fatalf("IsImage(%q) = false", mime)
			}
		})
	}
}

func TestDecodeImageRefuses(t *testing.T) {
	tests := []struct {
		name, mime, data, want string
	}{
		{"unknown type", "image/bmp", b64([]byte("BM\x00\x00")), `image type "image/bmp"`},
		{"no type", "", b64(testImages["image/png"]), `image type ""`},
		{"type with parameters", "image/png; charset=x", b64(testImages["image/png"]), "image type"},
		{"long type is cut", "image/" + strings.Repeat("x", 500), "", strings.Repeat("x", 58) + `"`},
		{"not base64", "image/png", "not base64!", "not base64"},
		{"URL-safe base64", "image/png", "iVBORw0KGgo_-A==", "not base64"},
		{"empty", "image/png", "", "whose data is not image/png"},
		{"PNG labelled JPEG", "image/jpeg", b64(testImages["image/png"]), "whose data is not image/jpeg"},
		{"JPEG labelled PNG", "image/png", b64(testImages["image/jpeg"]), "whose data is not image/png"},
		{"GIF labelled WebP", "image/webp", b64(testImages["image/gif"]), "whose data is not image/webp"},
		{"SVG labelled PNG", "image/png", b64(testImages["image/svg+xml"]), "whose data is not image/png"},
		{"PNG labelled SVG", "image/svg+xml", b64(testImages["image/png"]), "whose data is not image/svg+xml"},
		{"SVG that is not UTF-8", "image/svg+xml", b64([]byte("<svg>\xff\xfe</svg>")), "whose data is not image/svg+xml"},
		{"text without svg", "image/svg+xml", b64([]byte("<html></html>")), "whose data is not image/svg+xml"},
		{"svg past the first 4 KiB", "image/svg+xml", b64([]byte(strings.Repeat(" ", 4096) + "<svg/>")), "whose data is not image/svg+xml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := decodeImage(tt.mime, tt.data)
			if err == nil {
				t.Fatalf("accepted as %q, %d bytes", img.MIME, len(img.Data))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q; want it to say %q", err, tt.want)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

func strp(s string) *string { return &s }
func i64p(n int64) *int64   { return &n }

func wf(p string, size int64) wireFile { return wireFile{Path: strp(p), Size: i64p(size)} }

// manyFiles returns n distinct files under OutDir.
func manyFiles(n int) []wireFile {
	files := make([]wireFile, n)
	for i := range files {
		files[i] = wf(OutDir+"/f"+strconv.Itoa(i), int64(i))
	}
	return files
}

func TestOutFiles(t *testing.T) {
	tests := []struct {
		name string
		wire []wireFile
		want []OutFile
	}{
		{"none", nil, nil},
		{"empty list", []wireFile{}, nil},
		{"one", []wireFile{wf("/workspace/out/a.csv", 12)}, []OutFile{{Path: "/workspace/out/a.csv", Size: 12}}},
		{"nested, empty, largest", []wireFile{
			wf("/workspace/out/a/b/c.png", 0),
			wf("/workspace/out/d e#f.txt", 1<<48),
			wf("/workspace/out/é/..x", 3),
			wf("/workspace/out/.hidden", 4),
		}, []OutFile{
			{Path: "/workspace/out/a/b/c.png", Size: 0},
			{Path: "/workspace/out/d e#f.txt", Size: 1 << 48},
			{Path: "/workspace/out/é/..x", Size: 3},
			{Path: "/workspace/out/.hidden", Size: 4},
		}},
		{"path of 4096 bytes", []wireFile{wf(OutDir+"/"+strings.Repeat("x", 4096-len(OutDir)-1), 1)},
			[]OutFile{{Path: OutDir + "/" + strings.Repeat("x", 4096-len(OutDir)-1), Size: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outFiles(tt.wire)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("outFiles = %v; want %v", got, tt.want)
			}
		})
	}
	got, err := outFiles(manyFiles(maxOutFiles))
	if err != nil || len(got) != maxOutFiles {
		t.Fatalf("%d files: %d, %v", maxOutFiles, len(got), err)
	}
}

func TestOutFilesRefuses(t *testing.T) {
	tests := []struct {
		name string
		wire []wireFile
		want string
	}{
		{"over 100 files", manyFiles(maxOutFiles + 1), "101 files, over 100"},
		{"no path", []wireFile{{Size: i64p(1)}}, "without path or size"},
		{"no size", []wireFile{{Path: strp(OutDir + "/a")}}, "without path or size"},
		{"neither", []wireFile{{}}, "without path or size"},
		{"outside", []wireFile{wf("/etc/passwd", 1)}, "not a clean path under /workspace/out"},
		{"sibling prefix", []wireFile{wf("/workspace/output/a", 1)}, "not a clean path under"},
		{"relative", []wireFile{wf("workspace/out/a", 1)}, "not a clean path under"},
		{"dot-dot", []wireFile{wf("/workspace/out/../etc/passwd", 1)}, "not a clean path under"},
		{"dot", []wireFile{wf("/workspace/out/a/./b", 1)}, "not a clean path under"},
		{"double slash", []wireFile{wf("/workspace/out//a", 1)}, "not a clean path under"},
		{"trailing slash", []wireFile{wf("/workspace/out/a/", 1)}, "not a clean path under"},
		{"the directory", []wireFile{wf("/workspace/out", 1)}, "not a clean path under"},
		{"the directory with a slash", []wireFile{wf("/workspace/out/", 1)}, "not a clean path under"},
		{"empty path", []wireFile{wf("", 1)}, "not a clean path under"},
		{"NUL", []wireFile{wf("/workspace/out/a\x00b", 1)}, "not clean UTF-8"},
		{"invalid UTF-8", []wireFile{wf("/workspace/out/\xff", 1)}, "not clean UTF-8"},
		{"path over 4096 bytes", []wireFile{wf(OutDir+"/"+strings.Repeat("x", 4096-len(OutDir)), 1)}, "path over 4096 bytes"},
		{"negative size", []wireFile{wf(OutDir+"/a", -1)}, "bad file size"},
		{"size over 2^48", []wireFile{wf(OutDir+"/a", 1<<48+1)}, "bad file size"},
		{"duplicate", []wireFile{wf(OutDir+"/a", 1), wf(OutDir+"/b", 1), wf(OutDir+"/a", 2)}, `file "/workspace/out/a" twice`},
		{"bad one after good ones", []wireFile{wf(OutDir+"/a", 1), wf("/tmp/x", 1)}, "not a clean path under"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outFiles(tt.wire)
			if err == nil {
				t.Fatalf("accepted: %v", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q; want it to say %q", err, tt.want)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

func TestImageBox(t *testing.T) {
	tests := []struct {
		name      string
		maxCount  int
		maxBytes  int64
		sizes     []int
		extra     int64 // dropped by the sandbox
		wantSizes []int
		wantNote  string
	}{
		{"all fit", 3, 100, []int{10, 20, 30}, 0, []int{10, 20, 30}, ""},
		{"nothing", 3, 100, nil, 0, nil, ""},
		{"exactly the bytes", 3, 30, []int{10, 20}, 0, []int{10, 20}, ""},
		{"count", 2, 100, []int{1, 2, 3}, 0, []int{1, 2},
			"[1 image was not shown: a call shows at most 2 images and 100 bytes of images]"},
		{"bytes, a smaller one still fits", 10, 2048, []int{1024, 1500, 1000}, 0, []int{1024, 1000},
			"[1 image was not shown: a call shows at most 10 images and 2 KiB of images]"},
		{"one over the bytes alone", 10, 8 << 20, []int{8<<20 + 1}, 0, nil,
			"[1 image was not shown: a call shows at most 10 images and 8 MiB of images]"},
		{"none allowed", 0, 8 << 20, []int{1, 1}, 0, nil,
			"[2 images were not shown: a call shows at most 0 images and 8 MiB of images]"},
		{"dropped by the sandbox", 10, 8 << 20, []int{1}, 1, []int{1},
			"[1 image was not shown: a call shows at most 10 images and 8 MiB of images]"},
		{"both", 1, 8 << 20, []int{1, 1}, 4, []int{1},
			"[5 images were not shown: a call shows at most 1 images and 8 MiB of images]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := imageBox{maxCount: tt.maxCount, maxBytes: tt.maxBytes}
			for i, n := range tt.sizes {
				b.add(Image{MIME: "image/png", Data: bytes.Repeat([]byte{byte(i)}, n)})
			}
			var got []int
			var total int64
			for _, img := range b.images {
				got = append(got, len(img.Data))
				total += int64(len(img.Data))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantSizes) {
				t.Fatalf("kept %v; want %v", got, tt.wantSizes)
			}
			if len(b.images) > tt.maxCount || total > tt.maxBytes || b.bytes != total {
				t.Fatalf("kept %d images of %d bytes (counted %d), over %d, %d", len(b.images), total, b.bytes, tt.maxCount, tt.maxBytes)
			}
			if note := b.note(tt.extra); note != tt.wantNote {
				t.Fatalf("note %q; want %q", note, tt.wantNote)
			}
		})
	}
}

// TestFinishRichResult checks that a call's result carries its images and
// files, and notes what was left out.
func TestFinishRichResult(t *testing.T) {
	c := &callState{images: imageBox{maxCount: 1, maxBytes: 1 << 20}}
	png := Image{MIME: "image/png", Data: testImages["image/png"]}
	c.images.add(png)
	c.images.add(png)
	files := []OutFile{{Path: OutDir + "/a.csv", Size: 3}}
	res := c.finish(frame{Status: statusOK, Files: files, Dropped: map[string]int64{"images": 2, "files": 7}}, false)
	if len(res.Images) != 1 || fmt.Sprint(res.Files) != fmt.Sprint(files) {
		t.Fatalf("images %d, files %v", len(res.Images), res.Files)
	}
	want := []string{
		"[3 images were not shown: a call shows at most 1 images and 1 MiB of images]",
		"[7 more changed files under /workspace/out not listed: a call lists at most 100]",
	}
	if fmt.Sprint(res.Notes) != fmt.Sprint(want) {
		t.Fatalf("notes %q; want %q", res.Notes, want)
	}
	res = (&callState{images: imageBox{maxCount: 1, maxBytes: 1}}).finish(frame{Status: statusOK}, false)
	if res.Notes != nil || res.Images != nil || res.Files != nil {
		t.Fatalf("a plain result: %+v", res)
	}
}

func TestParseImageFrame(t *testing.T) {
	png := b64(testImages["image/png"])
	for mime, data := range testImages {
		line := fmt.Sprintf(`{"t":"image","id":"c1","mime":%q,"data":%q}`, mime, b64(data))
		f, err := parseFrame([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", mime, err)
		}
		if f.T != frameImage || f.ID != "c1" || f.Image.MIME != mime || !bytes.Equal(f.Image.Data, data) {
			t.Fatalf("%s: %+v", mime, f)
		}
	}
	bad := []struct{ name, line string }{
		{"no id", `{"t":"image","mime":"image/png","data":"` + png + `"}`},
		{"numeric id", `{"t":"image","id":1,"mime":"image/png","data":"` + png + `"}`},
		{"empty id", `{"t":"image","id":"","mime":"image/png","data":"` + png + `"}`},
		{"no data", `{"t":"image","id":"c1","mime":"image/png"}`},
		{"null data", `{"t":"image","id":"c1","mime":"image/png","data":null}`},
		{"numeric data", `{"t":"image","id":"c1","mime":"image/png","data":7}`},
		{"no mime", `{"t":"image","id":"c1","data":"` + png + `"}`},
		{"unknown mime", `{"t":"image","id":"c1","mime":"image/tiff","data":"` + png + `"}`},
		{"mime not a string", `{"t":"image","id":"c1","mime":["image/png"],"data":"` + png + `"}`},
		{"not base64", `{"t":"image","id":"c1","mime":"image/png","data":"%%%"}`},
		{"PNG labelled JPEG", `{"t":"image","id":"c1","mime":"image/jpeg","data":"` + png + `"}`},
		{"SVG not UTF-8", `{"t":"image","id":"c1","mime":"image/svg+xml","data":"` + b64([]byte("<svg>\xff</svg>")) + `"}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseFrame([]byte(tt.line))
			if !errors.Is(err, errProtocol) {
				t.Fatalf("parseFrame = %+v, %v; want errProtocol", f, err)
			}
		})
	}
}

func TestParseResultFiles(t *testing.T) {
	good := []struct {
		name    string
		line    string
		files   []OutFile
		dropped map[string]int64
	}{
		{"files",
			`{"t":"result","id":"c1","status":"ok","files":[{"path":"/workspace/out/a.csv","size":12},{"path":"/workspace/out/p/b.png","size":0}]}`,
			[]OutFile{{Path: "/workspace/out/a.csv", Size: 12}, {Path: "/workspace/out/p/b.png", Size: 0}}, nil},
		{"empty files", `{"t":"result","id":"c1","status":"ok","files":[]}`, nil, nil},
		{"null files", `{"t":"result","id":"c1","status":"ok","files":null}`, nil, nil},
		{"dropped images and files",
			`{"t":"result","id":"c1","status":"error","exc_type":"E","dropped":{"stdout":1,"stderr":2,"images":3,"files":4}}`,
			nil, map[string]int64{"stdout": 1, "stderr": 2, "images": 3, "files": 4}},
		{"dropped at the bound", `{"t":"result","id":"c1","status":"ok","dropped":{"images":281474976710656}}`,
			nil, map[string]int64{"images": 1 << 48}},
		{"files of an exit", `{"t":"result","id":"c1","status":"exit","exit_code":0,"files":[{"path":"/workspace/out/x","size":1}]}`,
			[]OutFile{{Path: "/workspace/out/x", Size: 1}}, nil},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseFrame([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(f.Files) != fmt.Sprint(tt.files) || fmt.Sprint(f.Dropped) != fmt.Sprint(tt.dropped) {
				t.Fatalf("files %v dropped %v; want %v, %v", f.Files, f.Dropped, tt.files, tt.dropped)
			}
		})
	}
	file := func(members string) string {
		return `{"t":"result","id":"c1","status":"ok","files":[` + members + `]}`
	}
	bad := []struct{ name, line string }{
		{"files not a list", `{"t":"result","id":"c1","status":"ok","files":{"path":"/workspace/out/a","size":1}}`},
		{"file not an object", file(`"/workspace/out/a"`)},
		{"null file", file(`null`)},
		{"no path", file(`{"size":1}`)},
		{"no size", file(`{"path":"/workspace/out/a"}`)},
		{"null size", file(`{"path":"/workspace/out/a","size":null}`)},
		{"size not whole", file(`{"path":"/workspace/out/a","size":1.5}`)},
		{"size as text", file(`{"path":"/workspace/out/a","size":"1"}`)},
		{"negative size", file(`{"path":"/workspace/out/a","size":-1}`)},
		{"size over 2^48", file(`{"path":"/workspace/out/a","size":281474976710657}`)},
		{"path outside", file(`{"path":"/etc/passwd","size":1}`)},
		{"dot-dot", file(`{"path":"/workspace/out/../etc/passwd","size":1}`)},
		{"the directory", file(`{"path":"/workspace/out","size":1}`)},
		{"NUL", file(`{"path":"/workspace/out/a\u0000","size":1}`)},
		{"duplicate", file(`{"path":"/workspace/out/a","size":1},{"path":"/workspace/out/a","size":1}`)},
		{"over 100", file(strings.TrimSuffix(strings.Repeat(`{"path":"/workspace/out/a","size":1},`, 101), ","))},
		{"dropped images negative", `{"t":"result","id":"c1","status":"ok","dropped":{"images":-1}}`},
		{"dropped files over 2^48", `{"t":"result","id":"c1","status":"ok","dropped":{"files":281474976710657}}`},
		{"dropped of an unknown kind", `{"t":"result","id":"c1","status":"ok","dropped":{"figures":1}}`},
		{"dropped images not a number", `{"t":"result","id":"c1","status":"ok","dropped":{"images":"1"}}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseFrame([]byte(tt.line))
			if !errors.Is(err, errProtocol) {
				t.Fatalf("parseFrame = %+v, %v; want errProtocol", f, err)
			}
		})
	}
}

// TestDisplayImages shows images through the real runtime: they come back
// in order, within the session's limits, the rest noted.
func TestDisplayImages(t *testing.T) {
	svg := string(testImages["image/svg+xml"])
	code := fmt.Sprintf("png = bytes.fromhex(%q)\nsvg = %q\ndisplay(png)\ndisplay(svg.encode(), 'text')\ndisplay(png)\n",
		fmt.Sprintf("%x", testImages["image/png"]), svg)
	tests := []struct {
		name     string
		opts     Options
		want     []string
		wantNote string
	}{
		{"defaults", Options{}, []string{"image/png", "image/svg+xml", "image/png"}, ""},
		{"two", Options{MaxImages: 2}, []string{"image/png", "image/svg+xml"},
			"[1 image was not shown: a call shows at most 2 images and 8 MiB of images]"},
		{"none", Options{MaxImages: -1}, nil,
			"[3 images were not shown: a call shows at most 0 images and 8 MiB of images]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newLocal(t, tt.opts)
			res := exec1(t, s, code, 0)
			want(t, res, StatusSuccess, "text\n")
			var got []string
			for _, img := range res.Images {
				got = append(got, img.MIME)
				if !IsImage(img.MIME, img.Data) {
					t.Fatalf("an image of type %s that is not one", img.MIME)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("images %v; want %v", got, tt.want)
			}
			var note string
			if len(res.Notes) > 0 {
				note = res.Notes[0]
			}
			if note != tt.wantNote || len(res.Notes) > 1 {
				t.Fatalf("notes %q; want %q", res.Notes, tt.wantNote)
			}
			if res.SandboxID == "" {
				t.Fatal("no SandboxID")
			}
		})
	}
	// display of bytes that are no image fails the call, not the session.
	s := newLocal(t, Options{})
	res := exec1(t, s, "display(b'not an image')", 0)
	if res.Status != StatusError || res.ExceptionType != "ValueError" || len(res.Images) != 0 {
		t.Fatalf("%+v", res)
	}
	want(t, exec1(t, s, "print('alive')", 0), StatusSuccess, "alive\n")
}

func TestFileFrames(t *testing.T) {
	good := `{"t":"file","id":"3","path":"/workspace/out/t.csv","data":"YSxiCjEsMgo="}`
	f, err := parseFrame([]byte(good))
	if err != nil || f.T != frameFile || f.ID != "3" || f.Path != "/workspace/out/t.csv" || string(f.FileData) != "a,b\n1,2\n" {
		t.Fatalf("parseFrame(%s) = %+v, %v", good, f, err)
	}
	for _, bad := range []string{
		`{"t":"file","path":"/workspace/out/t.csv","data":""}`,
		`{"t":"file","id":"3","data":""}`,
		`{"t":"file","id":"3","path":"/workspace/out/t.csv"}`,
		`{"t":"file","id":"3","path":"/etc/passwd","data":""}`,
		`{"t":"file","id":"3","path":"/workspace/out/../x","data":""}`,
		`{"t":"file","id":"3","path":"/workspace/out/t.csv","data":"not base64!"}`,
	} {
		if _, err := parseFrame([]byte(bad)); !errors.Is(err, errProtocol) {
			t.Errorf("parseFrame(%s): %v, want a protocol violation", bad, err)
		}
	}
}

func TestInlineFilesAttach(t *testing.T) {
	var in inlineFiles
	in.add(OutDir+"/a.csv", []byte("abc"))
	in.add(OutDir+"/b.csv", []byte("changed"))
	in.add(OutDir+"/huge", make([]byte, maxInlineBytes)) // over the cap with the others: dropped
	files := []OutFile{{Path: OutDir + "/a.csv", Size: 3}, {Path: OutDir + "/b.csv", Size: 4}, {Path: OutDir + "/huge", Size: maxInlineBytes}, {Path: OutDir + "/c", Size: 1}}
	in.attach(files)
	if string(files[0].Data) != "abc" || files[1].Data != nil || files[2].Data != nil || files[3].Data != nil {
		t.Fatalf("attached: %q %q %d %q; want only a.csv (b.csv's size differs, huge is over the cap, c was not sent)",
			files[0].Data, files[1].Data, len(files[2].Data), files[3].Data)
	}
}
