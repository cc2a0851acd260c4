package engine

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
func startFiles(t *testing.T, archives map[string][]byte) (*fakeDocker, Sandbox, Files) {
	t.Helper()
	f := newFakeDocker(t)
	f.archives = archives
	sb := mustStart(t, newTestDocker(t, f, nil))
	files, ok := sb.(Files)
	if !ok {
		t.Fatalf("%T does not implement Files", sb)
	}
	return f, sb, files
}

func TestOpenFile(t *testing.T) {
	ctx := context.Background()
	big := tarEntry{name: "big.bin", typ: tar.TypeReg, body: strings.Repeat("x", 2000)}
	short := big
	short.name = "short.bin"
	f, _, files := startFiles(t, map[string][]byte{
		"/workspace/out/a.txt":     tarOf(t, tarEntry{name: "a.txt", typ: tar.TypeReg, body: "hello"}, tarEntry{name: "b.txt", typ: tar.TypeReg, body: "next"}),
		"/workspace/out/dot.txt":   tarOf(t, tarEntry{name: "./dot.txt", typ: tar.TypeReg, body: "dot"}),
		"/workspace/out/link":      tarOf(t, tarEntry{name: "link", typ: tar.TypeSymlink, linkname: "/etc/passwd"}),
		"/workspace/out/d":         tarOf(t, tarEntry{name: "d", typ: tar.TypeDir}, tarEntry{name: "d/x", typ: tar.TypeReg, body: "x"}),
		"/workspace/out/other":     tarOf(t, tarEntry{name: "passwd", typ: tar.TypeReg, body: "root:x:0:0"}),
		"/workspace/out/big.bin":   tarOf(t, big),
		"/workspace/out/short.bin": tarOf(t, short)[:512+1000], // the header and half the content
		"/workspace/out/empty":     tarOf(t),
		"/workspace/out/garbage":   []byte(strings.Repeat("not a tar archive ", 64)),
	})
	read := func(path string, max int64) (string, int64, error) {
		rc, size, err := files.OpenFile(ctx, path, max)
		if err != nil {
			return "", 0, err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), size, err
	}

	t.Run("regular file", func(t *testing.T) {
		got, size, err := read("/workspace/out/a.txt", 0)
		if err != nil || got != "hello" || size != 5 {
			t.Fatalf("OpenFile = %q, %d, %v; want the first entry's content only", got, size, err)
		}
		if got, _, err := read("/workspace//out/./dot.txt", 3); err != nil || got != "dot" {
			t.Fatalf("OpenFile of an unclean path, entry named ./dot.txt = %q, %v", got, err)
		}
	})
	t.Run("not regular", func(t *testing.T) {
		for _, p := range []string{"/workspace/out/link", "/workspace/out/d", "/workspace/out/other"} {
			if _, _, err := read(p, 0); !errors.Is(err, ErrNotRegular) {
				t.Errorf("OpenFile(%s): %v, want ErrNotRegular", p, err)
			}
		}
	})
	t.Run("too large", func(t *testing.T) {
		if _, _, err := read("/workspace/out/big.bin", 1999); !errors.Is(err, ErrFileTooLarge) {
			t.Errorf("OpenFile over the limit: %v, want ErrFileTooLarge", err)
		}
		if got, size, err := read("/workspace/out/big.bin", 2000); err != nil || size != 2000 || len(got) != 2000 {
			t.Errorf("OpenFile at the limit: %d bytes, size %d, %v", len(got), size, err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		_, _, err := read("/workspace/out/missing", 0)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/workspace/out/missing") {
			t.Errorf("OpenFile of a missing file: %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		rc, size, err := files.OpenFile(ctx, "/workspace/out/short.bin", 0)
		if err != nil || size != 2000 {
			t.Fatalf("OpenFile = %d, %v", size, err)
		}
		defer rc.Close()
		if b, err := io.ReadAll(rc); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("reading a truncated archive: %d bytes, %v; want io.ErrUnexpectedEOF", len(b), err)
		}
	})
	t.Run("not an archive", func(t *testing.T) {
		for _, p := range []string{"/workspace/out/empty", "/workspace/out/garbage"} {
			if _, _, err := read(p, 0); err == nil || errors.Is(err, ErrNotRegular) || errors.Is(err, fs.ErrNotExist) {
				t.Errorf("OpenFile(%s): %v, want an archive error", p, err)
			}
		}
	})
	t.Run("bad paths", func(t *testing.T) {
		before := len(f.Calls())
		for _, p := range []string{"", "workspace/out/a.txt", "/workspace/out/../out/a.txt", "/workspace/out/a\x00.txt", "/", "//."} {
			if _, _, err := read(p, 0); err == nil {
				t.Errorf("OpenFile(%q) succeeded", p)
			}
		}
		if calls := f.Calls()[before:]; len(calls) != 0 {
			t.Errorf("bad paths reached the daemon: %v", calls)
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
	if got.id != sb.ID() || got.dir != InDir || !bytes.Equal(got.data, archive) || got.opts.CopyUIDGID || got.opts.AllowOverwriteDirWithFile {
		t.Fatalf("CopyToContainer(%s, %q, %d bytes, %+v); want the sandbox, %s, the stream, the headers' owners kept",
			shortID(got.id), got.dir, len(got.data), got.opts, InDir)
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
	_, _, err := files.OpenFile(ctx, "/workspace/out/a.txt", 0)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("OpenFile in a removed container: %v", err)
	}
	if err := files.CopyIn(ctx, InDir, strings.NewReader("")); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CopyIn in a removed container: %v", err)
	}
	f.setFail(nil)
	sb.Close()
	before := len(f.Calls())
	if _, _, err := files.OpenFile(ctx, "/workspace/out/a.txt", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("OpenFile after Close: %v, want ErrClosed", err)
	}
	if err := files.CopyIn(ctx, InDir, strings.NewReader("")); !errors.Is(err, ErrClosed) {
		t.Fatalf("CopyIn after Close: %v, want ErrClosed", err)
	}
	if calls := f.Calls()[before:]; len(calls) != 0 {
		t.Errorf("a closed sandbox called the daemon: %v", calls)
	}
}
