package statefile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the file is made with its directory, mode 0600, replaced
// whole on a second write, and no temporary file stays beside it.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory", "k.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v; want 0700", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("%d files beside it, want the file alone", len(entries))
	}
	if err := Write(filepath.Join(path, "under-a-file"), nil); err == nil {
		t.Fatal("a write under a file succeeded")
	}
}
