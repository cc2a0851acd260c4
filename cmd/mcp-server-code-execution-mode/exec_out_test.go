package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

func TestSaveOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	// A link planted in the directory must not be followed out of it.
	outside := t.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	res := &entrypoint.Result{SandboxID: "sb1",
		Images: []entrypoint.Image{{MIME: "image/png", Data: []byte("png")}, {MIME: "image/svg+xml", Data: []byte("<svg/>")}},
		Files: []entrypoint.OutFile{
			{Path: "/workspace/out/a.csv", Size: 3, Data: []byte("a,b")},
			{Path: "/workspace/out/deep/big.bin", Size: 5},
			{Path: "/workspace/out/../etc/passwd", Size: 1, Data: []byte("x")},
			{Path: "/workspace/out/escape/owned", Size: 1, Data: []byte("x")},
			{Path: "/workspace/out/gone.txt", Size: 1},
		}}
	open := func(_ context.Context, id, p string, max int64) (io.ReadCloser, int64, error) {
		if id != "sb1" || max <= 0 {
			t.Errorf("open(%q, %q, %d)", id, p, max)
		}
		if p == "/workspace/out/gone.txt" {
			return nil, 0, errors.New("no such file")
		}
		return io.NopCloser(strings.NewReader("12345")), 5, nil
	}
	saved, err := saveOutputs(context.Background(), dir, res, open)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"image-1.png": "png", "image-2.svg": "<svg/>", "a.csv": "a,b", "deep/big.bin": "12345"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a file was written through the planted link: %v", entries)
	}
	if len(saved.errs) != 3 || !strings.Contains(strings.Join(saved.errs, "\n"), "not a path under /workspace/out") ||
		!strings.Contains(strings.Join(saved.errs, "\n"), "gone.txt: reading it from the sandbox: no such file") {
		t.Errorf("errors: %q", saved.errs)
	}
	if saved.files[0] != filepath.Join(dir, "a.csv") || saved.files[2] != "" || saved.images[1] != filepath.Join(dir, "image-2.svg") {
		t.Errorf("saved as %q and %q", saved.images, saved.files)
	}

	var buf bytes.Buffer
	if err := writeJSON(&buf, res, saved); err != nil {
		t.Fatal(err)
	}
	var got execJSON
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || len(got.Images) != 2 || string(got.Images[0].Data) != "png" ||
		got.Files[1].SavedAs != filepath.Join(dir, "deep", "big.bin") || len(got.Errors) != 3 {
		t.Fatalf("JSON %s: %v", buf.Bytes(), err)
	}
}

func TestUnsavedNote(t *testing.T) {
	var buf bytes.Buffer
	unsaved(&buf, &entrypoint.Result{})
	if buf.Len() != 0 {
		t.Fatalf("a result with nothing to keep: %q", buf.String())
	}
	files := []entrypoint.OutFile{{Path: "/workspace/out/a"}, {Path: "/workspace/out/b"}, {Path: "/workspace/out/c"}, {Path: "/workspace/out/d"}}
	unsaved(&buf, &entrypoint.Result{Images: []entrypoint.Image{{}}, Files: files})
	if want := "not saved: 1 image and 4 files of /workspace/out (a, b, c, …); pass -out DIR to keep them\n"; !strings.HasSuffix(buf.String(), want) {
		t.Fatalf("note %q, want it to end %q", buf.String(), want)
	}
}
