//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dataImage is the sandbox image with numpy, pandas, matplotlib, scipy
// and Pillow that scripts/provision builds.
func dataImage() string {
	return cmp.Or(os.Getenv("MCP_BRIDGE_DATA_IMAGE"), "localhost/sandbox-python-data:3.11-r2")
}

// callRich makes a run_python call and returns the whole result.
func callRich(t testing.TB, cs *mcp.ClientSession, code string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "timeout": 60}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// contentOf sorts a result's content by kind.
type contentOf struct {
	text     string
	images   []*mcp.ImageContent
	embedded []*mcp.ResourceContents
	links    []*mcp.ResourceLink
}

func sortContent(t testing.TB, res *mcp.CallToolResult) contentOf {
	t.Helper()
	var c contentOf
	for i, item := range res.Content {
		switch v := item.(type) {
		case *mcp.TextContent:
			if i != 0 {
				t.Fatalf("text content at %d, want it first", i)
			}
			c.text = v.Text
		case *mcp.ImageContent:
			c.images = append(c.images, v)
		case *mcp.EmbeddedResource:
			c.embedded = append(c.embedded, v.Resource)
		case *mcp.ResourceLink:
			c.links = append(c.links, v)
		default:
			t.Fatalf("unexpected content %T", item)
		}
	}
	return c
}

// checkPNG checks that img is a PNG that decodes.
func checkPNG(t testing.TB, what string, img *mcp.ImageContent) {
	t.Helper()
	if img.MIMEType != "image/png" {
		t.Fatalf("%s: MIME type %q", what, img.MIMEType)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil || cfg.Width == 0 {
		t.Fatalf("%s: not a PNG that decodes: %v", what, err)
	}
}

// TestRichFigures shows matplotlib figures and PIL images as image
// content, in the data image on every engine: plt.show(), a figure left
// open, display(); over the limit, a note says how many were dropped.
func TestRichFigures(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs := connectBridge(t, e.Name(), "MCP_BRIDGE_IMAGE="+dataImage())
		res := callRich(t, cs, `import matplotlib.pyplot as plt
from PIL import Image
plt.plot([1, 2, 3], [1, 4, 9]); plt.title("squares"); plt.show()
display(Image.new("RGB", (16, 8), "red"))
fig = plt.figure(); plt.bar([1, 2], [3, 4])  # left open: shown at the end
print("drawn")`)
		c := sortContent(t, res)
		if res.IsError || c.text != "drawn" || len(c.images) != 3 {
			t.Fatalf("figures: isError %v, text %q, %d images", res.IsError, c.text, len(c.images))
		}
		for i, img := range c.images {
			checkPNG(t, "image "+string(rune('1'+i)), img)
		}
		if cfg, _ := png.DecodeConfig(bytes.NewReader(c.images[1].Data)); cfg.Width != 16 || cfg.Height != 8 {
			t.Fatalf("the PIL image came back %dx%d, want 16x8 and second", cfg.Width, cfg.Height)
		}
		res = callRich(t, cs, `import matplotlib.pyplot as plt
print(len(plt.get_fignums()))`)
		if c := sortContent(t, res); c.text != "0" || len(c.images) != 0 {
			t.Fatalf("figures are closed after a call: %q, %d images", c.text, len(c.images))
		}
		res = callRich(t, cs, `for i in range(12):
    display(Image.new("L", (4, 4), i))`)
		c = sortContent(t, res)
		if len(c.images) != 10 || !strings.Contains(c.text, "[2 images were not shown: a call shows at most 10 images and 8 MiB of images]") {
			t.Fatalf("over the limit: %d images, text %q", len(c.images), c.text)
		}
	})
}

// TestRichFilesOut returns what the code writes to /workspace/out: a small
// CSV embedded as text, a PNG as an image, a 5 MiB file as a link that
// resources/read serves (through the engine's archive API) for the life of
// the session; a symbolic link is never followed.
func TestRichFilesOut(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs := connectBridge(t, e.Name(), "MCP_BRIDGE_IMAGE="+dataImage())
		res := callRich(t, cs, `import hashlib, os
import pandas as pd, matplotlib.pyplot as plt
pd.DataFrame({"x": [1, 2, 3]}).to_csv("/workspace/out/table.csv", index=False)
big = os.urandom(5 << 20)
open("/workspace/out/big.bin", "wb").write(big)
plt.plot([1, 2]); plt.savefig("/workspace/out/plot.png"); plt.close("all")
os.symlink("/etc/passwd", "/workspace/out/passwd")
os.makedirs("/workspace/out/sub dir", exist_ok=True)
open("/workspace/out/sub dir/n#1.txt", "w").write("hi")
print(hashlib.sha256(big).hexdigest())`)
		c := sortContent(t, res)
		if res.IsError {
			t.Fatalf("files call failed: %s", c.text)
		}
		sum := strings.SplitN(c.text, "\n", 2)[0]
		if len(c.images) != 1 || len(c.embedded) != 2 || len(c.links) != 1 {
			t.Fatalf("files out: %d images, %d embedded, %d links; text %q", len(c.images), len(c.embedded), len(c.links), c.text)
		}
		checkPNG(t, "plot.png", c.images[0])
		if r := c.embedded[1]; r.URI != "sandbox://files/table.csv" || r.MIMEType != "text/csv" || r.Text != "x\n1\n2\n3\n" {
			t.Fatalf("table.csv: %+v", r)
		}
		if r := c.embedded[0]; r.URI != "sandbox://files/sub%20dir/n%231.txt" || r.Text != "hi" {
			t.Fatalf("sub dir/n#1.txt: %+v", r)
		}
		link := c.links[0]
		if link.URI != "sandbox://files/big.bin" || link.Size == nil || *link.Size != 5<<20 {
			t.Fatalf("big.bin link: %+v", link)
		}
		if strings.Contains(c.text, "passwd") {
			t.Fatalf("the symbolic link was listed: %q", c.text)
		}
		if !strings.Contains(c.text, "files out: big.bin (5 MiB, link)") {
			t.Fatalf("the text does not list the files: %q", c.text)
		}
		// A later call that writes nothing returns no file; the link
		// still reads, with the content the sandbox hashed.
		res = callRich(t, cs, "print('nothing written')")
		if c := sortContent(t, res); len(c.images)+len(c.embedded)+len(c.links) != 0 {
			t.Fatalf("a call that wrote nothing returned files: %+v", c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
		if err != nil {
			t.Fatal(err)
		}
		blob := read.Contents[0].Blob
		got := sha256.Sum256(blob)
		if len(blob) != 5<<20 || hex.EncodeToString(got[:]) != sum {
			t.Fatalf("resources/read of big.bin: %d bytes, sha256 %x, want %s", len(blob), got, sum)
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandbox://files/passwd"}); err == nil {
			t.Fatal("resources/read served a file no call reported")
		}
	})
}

// TestRichInputDir copies MCP_BRIDGE_INPUT_DIR into /workspace/in, where
// the code reads it and cannot change it; a directory over the limit
// fails the call with a clear error.
func TestRichInputDir(t *testing.T) {
	t.Parallel()
	in := t.TempDir()
	if err := os.MkdirAll(filepath.Join(in, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(in, "data.csv"), []byte("a,b\n1,2\n"), 0o600)
	os.WriteFile(filepath.Join(in, "nested", "notes.txt"), bytes.Repeat([]byte("n"), 3000), 0o600)
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs := connectBridge(t, e.Name(), "MCP_BRIDGE_INPUT_DIR="+in)
		text, isErr := runPython(t, cs, map[string]any{"code": `import os
print(open("/workspace/in/data.csv").read().strip())
print(len(open("/workspace/in/nested/notes.txt").read()))
for p in ("/workspace/in/data.csv", "/workspace/in/new.txt"):
    try:
        open(p, "a").write("x")
        print("wrote", p)
    except OSError as e:
        print(type(e).__name__)`})
		if isErr || text != "a,b\n1,2\n3000\nPermissionError\nPermissionError" {
			t.Fatalf("input dir: %q (isError %v)", text, isErr)
		}
		cs = connectBridge(t, e.Name(), "MCP_BRIDGE_INPUT_DIR="+in, "MCP_BRIDGE_INPUT_MAX_BYTES=2k")
		text, isErr = runPython(t, cs, map[string]any{"code": "print(1)"})
		if !isErr || !strings.Contains(text, "input directory is over its size limit") || !strings.Contains(text, "2 KiB") {
			t.Fatalf("over the limit: %q (isError %v)", text, isErr)
		}
	})
}

// TestRichOutputBudget cuts a 1 MiB output to the budget and keeps the
// whole readable as a resource of the session.
func TestRichOutputBudget(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs := connectBridge(t, e.Name())
		res := callRich(t, cs, `for i in range(1024):
    print("%04d" % i + "x" * 1019)`)
		c := sortContent(t, res)
		if len(c.text) > 34<<10 || !strings.Contains(c.text, "bytes cut to fit the output budget") ||
			!strings.HasPrefix(c.text, "0000x") || !strings.HasSuffix(c.text, "1023"+strings.Repeat("x", 1019)) {
			t.Fatalf("budget: %d bytes of text, head %q", len(c.text), c.text[:min(len(c.text), 80)])
		}
		if len(c.links) != 1 || !strings.HasPrefix(c.links[0].URI, "sandbox://output/") {
			t.Fatalf("the whole output is not linked: %+v", c.links)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.links[0].URI})
		if err != nil {
			t.Fatal(err)
		}
		if whole := read.Contents[0].Text; len(whole) != 1<<20-1 || strings.Count(whole, "\n") != 1023 {
			t.Fatalf("the whole output: %d bytes, %d lines", len(whole), strings.Count(whole, "\n")+1)
		}
	})
}

// TestRichTypeScriptClient reads rich results with the TypeScript SDK's
// client (node/rich.mjs) on one engine: a figure as image content, a
// small file embedded, a large one linked and read back whole.
func TestRichTypeScriptClient(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		type content struct {
			Type     string `json:"type"`
			MIMEType string `json:"mimeType"`
			URI      string `json:"uri"`
			Size     *int64 `json:"size"`
			Bytes    int    `json:"bytes"`
		}
		var out struct {
			Results []struct {
				IsError bool      `json:"isError"`
				Text    string    `json:"text"`
				Content []content `json:"content"`
				Reads   []struct {
					URI    string `json:"uri"`
					Bytes  int    `json:"bytes"`
					SHA256 string `json:"sha256"`
				} `json:"reads"`
			} `json:"results"`
		}
		calls := []map[string]any{{"code": `import hashlib, os
import matplotlib.pyplot as plt
plt.plot([3, 1, 2]); plt.show()
open("/workspace/out/notes.md", "w").write("# notes\n")
blob = os.urandom(3 << 20)
open("/workspace/out/blob.bin", "wb").write(blob)
print(hashlib.sha256(blob).hexdigest())`}}
		runNode(t, "rich.mjs", []string{"HOME=" + t.TempDir(), "MCP_BRIDGE_RUNTIME=" + e.Name(),
			"MCP_BRIDGE_IMAGE=" + dataImage(), "MCP_BRIDGE_LOG_LEVEL=ERROR"}, calls, &out)
		if len(out.Results) != 1 {
			t.Fatalf("%d results", len(out.Results))
		}
		r := out.Results[0]
		sum := strings.SplitN(r.Text, "\n", 2)[0]
		want := []content{
			{Type: "image", MIMEType: "image/png"},
			{Type: "resource_link", MIMEType: "application/octet-stream", URI: "sandbox://files/blob.bin"},
			{Type: "resource", MIMEType: "text/markdown", URI: "sandbox://files/notes.md", Bytes: 8},
		}
		if r.IsError || len(r.Content) != len(want) {
			t.Fatalf("result: isError %v, content %+v, text %q", r.IsError, r.Content, r.Text)
		}
		for i, w := range want {
			got := r.Content[i]
			if got.Type != w.Type || got.MIMEType != w.MIMEType || got.URI != w.URI || (w.Bytes != 0 && got.Bytes != w.Bytes) {
				t.Fatalf("content %d: %+v, want %+v", i, got, w)
			}
		}
		if r.Content[0].Bytes < 1000 || r.Content[1].Size == nil || *r.Content[1].Size != 3<<20 {
			t.Fatalf("image of %d bytes, link size %v", r.Content[0].Bytes, r.Content[1].Size)
		}
		if len(r.Reads) != 1 || r.Reads[0].Bytes != 3<<20 || r.Reads[0].SHA256 != sum {
			t.Fatalf("resources/read of the link: %+v, want 3 MiB with sha256 %s", r.Reads, sum)
		}
	})
}

// TestRichBadInput feeds the rich results what a careless or hostile
// program would: a full files-out mount, too many files, links out of it,
// images that are not images or too big. Each gets a clear answer and the
// session lives on.
func TestRichBadInput(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs := connectBridge(t, e.Name())
		steps := []struct {
			name, code string
			check      func(c contentOf, isErr bool) bool
		}{
			{"fill /workspace/out", `try:
    with open("/workspace/out/fill.bin", "wb") as f:
        for _ in range(100):
            f.write(b"\0" * (1 << 20))
except OSError as e:
    print("blocked errno", e.errno)`, func(c contentOf, isErr bool) bool {
				return !isErr && strings.HasPrefix(c.text, "blocked errno 28") && len(c.links) == 1 && *c.links[0].Size <= 64<<20
			}},
			{"too many files", `import os
os.remove("/workspace/out/fill.bin")
for i in range(150):
    open("/workspace/out/f%03d.txt" % i, "w").write("x")`, func(c contentOf, isErr bool) bool {
				return !isErr && len(c.embedded) == 100 && strings.Contains(c.text, "[50 more changed files under /workspace/out not listed: a call lists at most 100]")
			}},
			{"links out of /workspace/out", `import os, shutil
for n in os.listdir("/workspace/out"):
    os.remove("/workspace/out/" + n)
os.symlink("/etc", "/workspace/out/etc")
os.symlink("/etc/shadow", "/workspace/out/shadow")
os.link("/workspace/probe", "/workspace/out/hard") if os.path.exists("/workspace/probe") else None
print("linked")`, func(c contentOf, isErr bool) bool {
				return !isErr && c.text == "linked" && len(c.embedded)+len(c.links)+len(c.images) == 0
			}},
			{"bytes that are not an image", `display(b"GIF but not really")`, func(c contentOf, isErr bool) bool {
				return isErr && strings.Contains(c.text, "ValueError: display: the bytes are not a PNG, JPEG, GIF, WebP or SVG image")
			}},
			{"an image over 8 MiB", `import os
display(b"\x89PNG\r\n\x1a\n" + os.urandom(9 << 20))
print("shown")`, func(c contentOf, isErr bool) bool {
				return !isErr && len(c.images) == 0 && strings.Contains(c.text, "[1 image was not shown: a call shows at most 10 images and 8 MiB of images]")
			}},
			{"state kept", `print("alive")`, func(c contentOf, isErr bool) bool { return !isErr && c.text == "alive" }},
		}
		for _, s := range steps {
			res := callRich(t, cs, s.code)
			c := sortContent(t, res)
			if !s.check(c, res.IsError) {
				t.Fatalf("%s: isError %v, text %q, %d images, %d embedded, %d links", s.name, res.IsError,
					c.text[:min(len(c.text), 400)], len(c.images), len(c.embedded), len(c.links))
			}
		}
	})
}
