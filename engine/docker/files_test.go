package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A tarEntry is one entry of a test archive.
type tarEntry struct {
	name     string
	typ      byte
	body     string
	linkname string
}

// tarOf returns the tar archive of entries.
func tarOf(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Linkname: e.linkname}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// startFiles starts a sandbox on a fake daemon whose container holds the
// archives, and returns it as Files.
func startFiles(t *testing.T, archives map[string][]byte) (*fakeDocker, engine.Sandbox, engine.Files) {
	t.Helper()
	f := newFakeDocker(t)
	f.archives = archives
	sb := mustStart(t, newTestDocker(t, f, nil))
	files, ok := sb.(engine.Files)
	if !ok {
		t.Fatalf("%T does not implement Files", sb)
	}
	return f, sb, files
}

// TestOpenFile reads files out of fake archives of directories, named
// as Docker names them: the directory's base name, then the path under it.
func TestOpenFile(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 2000)
	f, _, files := startFiles(t, map[string][]byte{
		engine.OutDir: tarOf(t,
			tarEntry{name: "out/", typ: tar.TypeDir},
			tarEntry{name: "out/0big.bin", typ: tar.TypeReg, body: big},
			tarEntry{name: "out/a.txt", typ: tar.TypeReg, body: "hello"},
			tarEntry{name: "out/b.txt", typ: tar.TypeReg, body: "next"},
			tarEntry{name: "out/d/", typ: tar.TypeDir},
			tarEntry{name: "out/d/e/", typ: tar.TypeDir},
			tarEntry{name: "out/d/e/x", typ: tar.TypeReg, body: "deep"},
			tarEntry{name: "out/d/x", typ: tar.TypeReg, body: "x"},
			tarEntry{name: "./out/dot.txt", typ: tar.TypeReg, body: "dot"},
			tarEntry{name: "out/fifo", typ: tar.TypeFifo},
			tarEntry{name: "out/hard", typ: tar.TypeLink, linkname: "out/a.txt"},
			tarEntry{name: "out/link", typ: tar.TypeSymlink, linkname: "/etc/passwd"},
			// sub is a link to /etc: the engine archives the link, not /etc.
			tarEntry{name: "out/sub", typ: tar.TypeSymlink, linkname: "/etc"},
			tarEntry{name: "out/z.txt", typ: tar.TypeReg, body: "last"},
		),
		// A root that is itself a link: the daemon archives the link alone.
		"/workspace/linked": tarOf(t, tarEntry{name: "linked", typ: tar.TypeSymlink, linkname: "/etc"}),
		// A whole file, then the header and part of the next.
		"/workspace/short": tarOf(t,
			tarEntry{name: "short/", typ: tar.TypeDir},
			tarEntry{name: "short/a.bin", typ: tar.TypeReg, body: big},
			tarEntry{name: "short/b.bin", typ: tar.TypeReg, body: big},
		)[:3*512+2000+512+1000],
		"/workspace/empty":   tarOf(t),
		"/workspace/garbage": []byte(strings.Repeat("not a tar archive ", 64)),
		// Entries outside the directory archived.
		"/workspace/odd": tarOf(t,
			tarEntry{name: "odd/", typ: tar.TypeDir},
			tarEntry{name: "odd/../etc/passwd", typ: tar.TypeReg, body: "root:x:0:0"},
		),
	})
	read := func(root, rel string, max int64) (string, int64, error) {
		t.Helper()
		rc, size, err := files.OpenFile(ctx, root, rel, max)
		if err != nil {
			return "", 0, err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err == nil && int64(len(b)) != size {
			t.Errorf("OpenFile(%s, %s): size %d, read %d bytes", root, rel, size, len(b))
		}
		return string(b), size, err
	}

	t.Run("regular file", func(t *testing.T) {
		for _, tt := range []struct{ root, rel, want string }{
			{engine.OutDir, "a.txt", "hello"},
			{engine.OutDir, "z.txt", "last"},
			{engine.OutDir, "d/x", "x"},
			{engine.OutDir, "d/e/x", "deep"},
			{engine.OutDir, "dot.txt", "dot"},
			{"/workspace//out/", "b.txt", "next"},
		} {
			if got, size, err := read(tt.root, tt.rel, 0); err != nil || got != tt.want || size != int64(len(tt.want)) {
				t.Errorf("OpenFile(%s, %s) = %q, %d, %v; want %q", tt.root, tt.rel, got, size, err, tt.want)
			}
		}
	})
	t.Run("not regular", func(t *testing.T) {
		for _, tt := range []struct{ root, rel, says string }{
			{engine.OutDir, "link", "symbolic link to /etc/passwd"},
			{engine.OutDir, "sub", "symbolic link to /etc"},
			{engine.OutDir, "d", "directory"},
			{engine.OutDir, "d/e", "directory"},
			{engine.OutDir, "fifo", "named pipe"},
			{engine.OutDir, "hard", "hard link to out/a.txt"},
			// The archive holds the link sub, not /etc's files: a file
			// under a link is refused as soon as the link is seen.
			{engine.OutDir, "sub/passwd", "lies under out/sub, a symbolic link to /etc"},
			{engine.OutDir, "sub/x/y", "lies under out/sub"},
			{"/workspace/linked", "passwd", "lies under linked, a symbolic link to /etc"},
		} {
			_, _, err := read(tt.root, tt.rel, 0)
			if !errors.Is(err, engine.ErrNotRegular) || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), tt.root+"/"+tt.rel) {
				t.Errorf("OpenFile(%s, %s): %v; want ErrNotRegular naming the path, saying %q", tt.root, tt.rel, err, tt.says)
			}
		}
	})
	t.Run("too large", func(t *testing.T) {
		if _, _, err := read(engine.OutDir, "0big.bin", 1999); !errors.Is(err, engine.ErrFileTooLarge) {
			t.Errorf("OpenFile over the limit: %v, want ErrFileTooLarge", err)
		}
		if got, size, err := read(engine.OutDir, "0big.bin", 2000); err != nil || size != 2000 || got != big {
			t.Errorf("OpenFile at the limit: %d bytes, size %d, %v", len(got), size, err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		for _, rel := range []string{"missing", "d/missing", "a.txt/x", "out", "d/x/y", "zz"} {
			_, _, err := read(engine.OutDir, rel, 0)
			if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, engine.ErrNotRegular) || !strings.Contains(err.Error(), engine.OutDir+"/"+rel) {
				t.Errorf("OpenFile(%s): %v, want fs.ErrNotExist naming the path", rel, err)
			}
		}
		f.setFail(func(method, id string) error {
			if method == "CopyFromContainer" {
				return fmt.Errorf("Could not find the file /nope in container %s: %w", id, cerrdefs.ErrNotFound)
			}
			return nil
		})
		defer f.setFail(nil)
		if _, _, err := read("/nope", "a.txt", 0); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFile under a missing directory: %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		rc, size, err := files.OpenFile(ctx, "/workspace/short", "b.bin", 0)
		if err != nil || size != 2000 {
			t.Fatalf("OpenFile = %d, %v", size, err)
		}
		defer rc.Close()
		if b, err := io.ReadAll(rc); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("reading a truncated archive: %d bytes, %v; want io.ErrUnexpectedEOF", len(b), err)
		}
		// The archive ends within a file before the one wanted.
		if _, _, err := read("/workspace/short", "c.bin", 0); !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFile after a truncated entry: %v, want io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("not an archive", func(t *testing.T) {
		for _, root := range []string{"/workspace/empty", "/workspace/garbage", "/workspace/odd"} {
			if _, _, err := read(root, "passwd", 0); err == nil || errors.Is(err, engine.ErrNotRegular) || errors.Is(err, fs.ErrNotExist) {
				t.Errorf("OpenFile(%s, passwd): %v, want an archive error", root, err)
			}
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		before := len(f.Calls())
		for _, root := range []string{"", "workspace/out", "/", "//.", "/workspace/../out", "/workspace/o\x00ut"} {
			if _, _, err := read(root, "a.txt", 0); err == nil || !strings.Contains(err.Error(), "path") {
				t.Errorf("OpenFile(%q, a.txt): %v, want an error on the path", root, err)
			}
		}
		for _, rel := range []string{"", ".", "/a.txt", "..", "../a.txt", "d/../a.txt", "d/..", "./a.txt", "d//x", "d/", "d/./x", "a\x00.txt"} {
			if _, _, err := read(engine.OutDir, rel, 0); err == nil || !strings.Contains(err.Error(), "relative path") {
				t.Errorf("OpenFile(%s, %q): %v, want an error on the relative path", engine.OutDir, rel, err)
			}
		}
		if calls := f.Calls()[before:]; len(calls) != 0 {
			t.Errorf("bad arguments reached the daemon: %v", calls)
		}
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.archivesOpen != 0 {
		t.Errorf("%d archives left open", f.archivesOpen)
	}
}

func TestCopyIn(t *testing.T) {
	ctx := context.Background()
	f, sb, files := startFiles(t, nil)
	archive := tarOf(t, tarEntry{name: "x.txt", typ: tar.TypeReg, body: "data"})
	if err := files.CopyIn(ctx, "/workspace/in/", bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	copied := slices.Clone(f.copiedIn)
	f.mu.Unlock()
	if len(copied) != 1 {
		t.Fatalf("CopyToContainer called %d times", len(copied))
	}
	got := copied[0]
	if got.id != sb.ID() || got.dir != engine.InDir || !bytes.Equal(got.data, archive) || got.opts.CopyUIDGID || got.opts.AllowOverwriteDirWithFile {
		t.Fatalf("CopyToContainer(%s, %q, %d bytes, %+v); want the sandbox, %s, the stream, the headers' owners kept",
			lifecycle.ShortID(got.id), got.dir, len(got.data), got.opts, engine.InDir)
	}
	if err := files.CopyIn(ctx, "in", bytes.NewReader(archive)); err == nil {
		t.Fatal("CopyIn into a relative path succeeded")
	}
	f.setFail(func(method, id string) error {
		if method == "CopyToContainer" {
			return fmt.Errorf("Could not find the file /nope in container %s: %w", id, cerrdefs.ErrNotFound)
		}
		return nil
	})
	if err := files.CopyIn(ctx, "/nope", bytes.NewReader(archive)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CopyIn into a missing directory: %v, want fs.ErrNotExist", err)
	}
}

// TestFilesOfAGoneContainer checks the errors when the container is gone:
// removed behind the sandbox's back (not "not exist": the daemon's "not
// found" is about the container), or closed.
func TestFilesOfAGoneContainer(t *testing.T) {
	ctx := context.Background()
	f, sb, files := startFiles(t, nil)
	f.setFail(func(method, id string) error {
		switch method {
		case "CopyFromContainer", "CopyToContainer", "ContainerInspect":
			return fmt.Errorf("No such container: %s: %w", id, cerrdefs.ErrNotFound)
		}
		return nil
	})
	_, _, err := files.OpenFile(ctx, engine.OutDir, "a.txt", 0)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("OpenFile in a removed container: %v", err)
	}
	if err := files.CopyIn(ctx, engine.InDir, strings.NewReader("")); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CopyIn in a removed container: %v", err)
	}
	f.setFail(nil)
	sb.Close()
	before := len(f.Calls())
	if _, _, err := files.OpenFile(ctx, engine.OutDir, "a.txt", 0); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("OpenFile after Close: %v, want ErrClosed", err)
	}
	if err := files.CopyIn(ctx, engine.InDir, strings.NewReader("")); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("CopyIn after Close: %v, want ErrClosed", err)
	}
	if calls := f.Calls()[before:]; len(calls) != 0 {
		t.Errorf("a closed sandbox called the daemon: %v", calls)
	}
}
