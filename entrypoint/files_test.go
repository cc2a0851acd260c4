package entrypoint

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A logRecorder collects what scanInput logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) log(msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(append([]any{msg}, args...)...))
}

// inputTree writes an input directory: nested directories, an empty one,
// files of known content, and symbolic links to a file and a directory.
func inputTree(t *testing.T) (dir string, files map[string]string) {
	t.Helper()
	dir = t.TempDir()
	files = map[string]string{
		"a.txt":            "hello",
		"sub/b.csv":        "x,y\n1,2\n",
		"sub/deeper/c.bin": strings.Repeat("\x00\xff", 500),
		"sub/empty.txt":    "",
	}
	for _, d := range []string{"empty", "sub/deeper"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range files {
		// Modes the sandbox must not see: the tar says 0444.
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link.txt": "a.txt", "sub/up": ".."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

func TestScanInput(t *testing.T) {
	dir, files := inputTree(t)
	var logs logRecorder
	in, err := scanInput(dir, 1<<20, logs.log)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range in.entries {
		s := e.rel
		if e.dir {
			s += "/"
		} else if want, ok := files[e.rel]; !ok || int64(len(want)) != e.size {
			t.Errorf("%s: %d bytes; want %d", e.rel, e.size, len(want))
		}
		got = append(got, s)
	}
	// Lexical order, each directory before what it holds; links skipped.
	want := []string{"a.txt", "empty/", "sub/", "sub/b.csv", "sub/deeper/", "sub/deeper/c.bin", "sub/empty.txt"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries %v; want %v", got, want)
	}
	if in.bytes != 5+8+1000 || in.dir != dir {
		t.Fatalf("bytes %d dir %q", in.bytes, in.dir)
	}
	if len(logs.lines) != 2 || !strings.Contains(logs.lines[0], filepath.Join(dir, "link.txt")) ||
		!strings.Contains(logs.lines[1], filepath.Join(dir, "sub/up")) {
		t.Fatalf("logged %q; want the two links", logs.lines)
	}
	// The limit is on the bytes of the files: exactly at it is fine.
	if _, err := scanInput(dir, in.bytes, logs.log); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

func TestScanInputEmpty(t *testing.T) {
	in, err := scanInput(t.TempDir(), 1, (&logRecorder{}).log)
	if err != nil || len(in.entries) != 0 || in.bytes != 0 {
		t.Fatalf("%+v, %v", in, err)
	}
	var b bytes.Buffer
	if err := in.writeTar(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := tar.NewReader(&b).Next(); err != io.EOF {
		t.Fatalf("an empty input's tar: %v; want io.EOF", err)
	}
}

func TestScanInputRefuses(t *testing.T) {
	dir, _ := inputTree(t)
	file := filepath.Join(dir, "a.txt")
	many := t.TempDir()
	for i := range maxInputEntries + 1 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprint(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		dir    string
		max    int64
		target error    // nil: any error
		says   []string // what the message names
	}{
		{"one byte over", dir, 1012, ErrInputTooLarge, []string{dir, "1012 bytes"}},
		{"under 1 KiB", dir, 1 << 10, nil, nil}, // 1013 bytes fit
		{"far over", dir, 10, ErrInputTooLarge, []string{dir, "more than 10 bytes"}},
		{"too many entries", many, 1 << 20, ErrInputTooLarge, []string{many, "10000 files and directories"}},
		{"missing", filepath.Join(dir, "nope"), 1 << 20, fs.ErrNotExist, []string{"nope"}},
		{"a file", file, 1 << 20, nil, []string{file, "not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := scanInput(tt.dir, tt.max, (&logRecorder{}).log)
			if tt.says == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %d entries, %d bytes", len(in.entries), in.bytes)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("error %q is not %q", err, tt.target)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestWriteTar(t *testing.T) {
	dir, files := inputTree(t)
	in, err := scanInput(dir, 1<<20, (&logRecorder{}).log)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := in.writeTar(&b); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&b)
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(in.entries) {
				t.Fatalf("%d entries in the tar; want %d", i, len(in.entries))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e := in.entries[i]
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q); want root", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if e.dir {
			if h.Typeflag != tar.TypeDir || h.Name != e.rel+"/" || h.Mode != 0o555 || h.Size != 0 {
				t.Errorf("directory %s: type %q name %q mode %o size %d", e.rel, h.Typeflag, h.Name, h.Mode, h.Size)
			}
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || h.Name != e.rel || h.Mode != 0o444 || h.Size != int64(len(files[e.rel])) ||
			string(content) != files[e.rel] || !h.ModTime.Equal(e.modTime) {
			t.Errorf("file %s: type %q name %q mode %o size %d content %q mtime %v",
				e.rel, h.Typeflag, h.Name, h.Mode, h.Size, content, h.ModTime)
		}
	}
}

func TestWriteTarFileChanged(t *testing.T) {
	tests := []struct {
		name   string
		change func(p string) error
		says   string
		target error
	}{
		{"shrunk", func(p string) error { return os.Truncate(p, 2) }, "changed while it was copied", nil},
		{"emptied", func(p string) error { return os.WriteFile(p, nil, 0o600) }, "changed while it was copied", nil},
		{"removed", os.Remove, "b.csv", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := inputTree(t)
			in, err := scanInput(dir, 1<<20, (&logRecorder{}).log)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "sub", "b.csv")
			if err := tt.change(p); err != nil {
				t.Fatal(err)
			}
			err = in.writeTar(io.Discard)
			if err == nil {
				t.Fatal("a file that changed since the scan was copied")
			}
			if !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name %s and say %q", err, p, tt.says)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("error %q is not %q", err, tt.target)
			}
		})
	}
}

func TestMountBytes(t *testing.T) {
	tests := []struct {
		bytes   int64
		entries int
	}{
		{0, 0}, {1, 1}, {5000, 3}, {64 << 20, 10000},
	}
	for _, tt := range tests {
		in := &input{bytes: tt.bytes, entries: make([]inputEntry, tt.entries)}
		if got, least := in.mountBytes(), tt.bytes+int64(tt.entries)*tmpfsPage; got < least {
			t.Errorf("mountBytes of %d bytes in %d entries = %d; want at least %d", tt.bytes, tt.entries, got, least)
		}
	}
}

func TestOpenFile(t *testing.T) {
	ctx := context.Background()
	s := newLocal(t, Options{})
	badPaths := []string{
		"/etc/passwd", "/workspace/out", "/workspace/out/", "/workspace/out/../in/x", "/workspace/out/a/./b",
		"workspace/out/a", "/workspace/out/a\x00", "/workspace/out/\xff", "/workspace/out/" + strings.Repeat("x", 4096),
	}
	// The path is checked first, whatever the sandbox.
	checkPaths := func(sandboxID string) {
		t.Helper()
		for _, p := range badPaths {
			rc, _, err := s.OpenFile(ctx, sandboxID, p, 0)
			if err == nil {
				rc.Close()
				t.Fatalf("OpenFile(%q) opened", p)
			}
			if errors.Is(err, ErrSandboxGone) || errors.Is(err, ErrNoFiles) ||
				!strings.Contains(err.Error(), "opening a file") || !strings.Contains(err.Error(), "path") {
				t.Fatalf("OpenFile(%q): %v; want a clear error on the path", cutUTF8(p, 40), err)
			}
		}
	}
	open := func(sandboxID string, target error) {
		t.Helper()
		rc, _, err := s.OpenFile(ctx, sandboxID, OutDir+"/a.csv", 0)
		if !errors.Is(err, target) {
			if rc != nil {
				rc.Close()
			}
			t.Fatalf("OpenFile in sandbox %q: %v; want %v", sandboxID, err, target)
		}
	}
	// No sandbox yet.
	checkPaths("local")
	open("local", ErrSandboxGone)
	open("", ErrSandboxGone)
	res := exec1(t, s, "print('hi')", 0)
	if res.SandboxID == "" {
		t.Fatal("a result without its SandboxID")
	}
	checkPaths(res.SandboxID)
	open("another", ErrSandboxGone)
	// The local engine's sandboxes have no file access.
	open(res.SandboxID, ErrNoFiles)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(res.SandboxID, ErrSandboxGone)
}

// TestInputDirStartFails starts sessions with an input directory on an
// engine whose sandboxes take no files, and with an input over its limit:
// every start fails with a clear, wrapped error, and the session keeps
// answering.
func TestInputDirStartFails(t *testing.T) {
	dir, _ := inputTree(t)
	tests := []struct {
		name   string
		opts   Options
		target error
		says   string
	}{
		{"no file access", Options{InputDir: dir}, ErrNoFiles, "starting sandbox"},
		{"over the limit", Options{InputDir: dir, InputMaxBytes: 1 << 10 / 2}, ErrInputTooLarge, dir},
		{"missing", Options{InputDir: filepath.Join(dir, "gone")}, fs.ErrNotExist, "input directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newLocal(t, tt.opts)
			ctx := context.Background()
			for i := range 2 {
				err := s.Start(ctx)
				if i == 1 {
					_, err = s.Execute(ctx, "print(1)", 0)
				}
				if !errors.Is(err, tt.target) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("attempt %d: %v; want %v naming %q", i+1, err, tt.target, tt.says)
				}
			}
			if rc, _, err := s.OpenFile(ctx, "local", OutDir+"/a", 0); !errors.Is(err, ErrSandboxGone) {
				if rc != nil {
					rc.Close()
				}
				t.Fatalf("OpenFile after failed starts: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestInputFingerprint checks that the fingerprint of a scanned input
// changes with a file's content, a new file or a new directory, and not
// with a second scan of the same tree.
func TestInputFingerprint(t *testing.T) {
	dir := t.TempDir()
	scan := func() string {
		t.Helper()
		in, err := scanInput(dir, 1<<20, func(string, ...any) {})
		if err != nil {
			t.Fatal(err)
		}
		return in.fingerprint()
	}
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), []byte("x,y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := scan()
	if again := scan(); again != first {
		t.Fatal("two scans of the same tree differ")
	}
	seen := map[string]string{first: "first"}
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"a longer file", func() error { return os.WriteFile(filepath.Join(dir, "a.csv"), []byte("x,y\n1,2\n"), 0o644) }},
		{"a new file", func() error { return os.WriteFile(filepath.Join(dir, "b.txt"), nil, 0o644) }},
		{"a new directory", func() error { return os.Mkdir(filepath.Join(dir, "sub"), 0o755) }},
		{"a file's time", func() error {
			return os.Chtimes(filepath.Join(dir, "b.txt"), time.Now(), time.Now().Add(-time.Hour))
		}},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		fp := scan()
		if prev, ok := seen[fp]; ok {
			t.Fatalf("after %s the fingerprint is that of %s", step.what, prev)
		}
		seen[fp] = step.what
	}
}

// TestInputCurrent checks that a sandbox's input copy counts as current
// while the directory holds what was copied, and not once it changed or
// cannot be read; a session with no input directory is always current.
func TestInputCurrent(t *testing.T) {
	if !New(nil, nil).inputCurrent(&container{}) {
		t.Fatal("a session without an input directory is not current")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(nil, &Options{InputDir: dir})
	in, err := scanInput(dir, 1<<20, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	ctr := &container{inputPrint: in.fingerprint()}
	if !s.inputCurrent(ctr) {
		t.Fatal("the copy of an unchanged directory is not current")
	}
	if err := os.WriteFile(filepath.Join(dir, "b.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.inputCurrent(ctr) {
		t.Fatal("the copy is current after a file was added")
	}
	if New(nil, &Options{InputDir: filepath.Join(dir, "gone")}).inputCurrent(ctr) {
		t.Fatal("an unreadable input directory counts as current")
	}
}
