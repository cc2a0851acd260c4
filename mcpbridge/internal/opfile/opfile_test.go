package opfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var errRefused = errors.New("refused")

func words(data []byte, _ string) ([]string, error) {
	if strings.Contains(string(data), "bad") {
		return nil, errors.New("a bad word")
	}
	return strings.Fields(string(data)), nil
}

// TestFile follows a file through its life: absent, written, changed,
// broken, mended; and a named file that is missing or not a file.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	loads := 0
	f := New(Options[[]string]{Dir: dir, Defaults: []string{"new.txt", "old.txt"}, What: "words file", Env: "WORDS", Parse: words,
		OnLoad: func(string, []string, error) { loads++ }})
	if got := f.Path(); got != filepath.Join(dir, "new.txt") {
		t.Fatalf("path %s: want the first default when none exists", got)
	}
	if v, err := f.Current(); v != nil || err != nil {
		t.Fatalf("absent default: %q, %v; want nothing", v, err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(f.Path(), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a b")
	if v, err := f.Current(); err != nil || strings.Join(v, ",") != "a,b" {
		t.Fatalf("written: %q, %v", v, err)
	}
	f.Current()
	if loads != 2 {
		t.Fatalf("%d loads: an unchanged file is not read again", loads)
	}
	write("a b c")
	if v, _ := f.Current(); len(v) != 3 {
		t.Fatalf("changed: %q", v)
	}
	write("bad")
	if v, err := f.Current(); v != nil || err == nil || err.Error() != "words file "+filepath.Base(f.Path())+" is invalid: a bad word" {
		t.Fatalf("broken: %q, %v", v, err)
	}
	write("ok")
	if v, err := f.Current(); err != nil || len(v) != 1 {
		t.Fatalf("mended: %q, %v", v, err)
	}

	old := t.TempDir()
	os.WriteFile(filepath.Join(old, "old.txt"), []byte("x"), 0o644)
	if got := New(Options[[]string]{Dir: old, Defaults: []string{"new.txt", "old.txt"}, Parse: words}).Path(); got != filepath.Join(old, "old.txt") {
		t.Errorf("path %s: want the default that exists", got)
	}

	missing := New(Options[[]string]{Path: filepath.Join(dir, "none"), What: "words file", Env: "WORDS", Parse: words,
		MissingRefusal: "; nothing works", Sentinel: errRefused})
	_, err := missing.Current()
	if !errors.Is(err, errRefused) || !strings.HasSuffix(err.Error(), "does not exist (WORDS names it); nothing works") || strings.Contains(err.Error(), dir) {
		t.Errorf("named and missing: %v", err)
	}
	if _, err := New(Options[[]string]{Path: dir, What: "words file", Parse: words}).Current(); err == nil || !strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), filepath.Dir(dir)) {
		t.Errorf("a directory: %v", err)
	}
	var none *File[[]string]
	if v, err := none.Current(); v != nil || err != nil {
		t.Errorf("nil file: %q, %v", v, err)
	}
}
