package docker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/system"
)

// TestLinkCheckpoint: a fork's copy of a checkpoint holds its files,
// linked, and a file of its own, so that each copy's content differs.
func TestLinkCheckpoint(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "containers", "parent", "checkpoints", "cp")
	if err := os.MkdirAll(src, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "checkpoint.img"), []byte("state"), 0o600)
	os.WriteFile(filepath.Join(src, "pages.img"), make([]byte, 4096), 0o600)
	os.Mkdir(filepath.Join(src, "sub"), 0o700) // not copied: a checkpoint is flat
	os.MkdirAll(filepath.Join(root, "containers", "child"), 0o700)
	info := system.Info{DockerRootDir: root}
	dst := filepath.Join(checkpointsDir(info, "child"), "cp")
	for i := range 2 {
		if err := linkCheckpoint(src, dst+string(rune('a'+i)), i); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dst+"a", "checkpoint.img"))
	if err != nil || string(b) != "state" {
		t.Fatalf("copied checkpoint: %q %v", b, err)
	}
	a, _ := os.ReadFile(filepath.Join(dst+"a", "mcp-fork"))
	c, _ := os.ReadFile(filepath.Join(dst+"b", "mcp-fork"))
	if string(a) == string(c) || len(a) == 0 {
		t.Errorf("each copy should carry its own marker: %q %q", a, c)
	}
	if _, err := os.Stat(filepath.Join(dst+"a", "sub")); err == nil {
		t.Error("a directory in the checkpoint was copied")
	}
	if got := checkpointBytes(info, "parent", "cp"); got != 5+4096 {
		t.Errorf("checkpointBytes = %d", got)
	}
	if checkpointsDir(system.Info{DockerRootDir: "relative"}, "x") != "" || checkpointsDir(info, "missing") != "" {
		t.Error("a data root not on this host should give no directory")
	}
}

// TestLockWake: of bridges waking one checkpoint, one holds the lock; a
// lock older than wakeWait (a dead bridge's) is taken over; each holder's
// nonce differs, so that each upload is of content of its own.
func TestLockWake(t *testing.T) {
	dir := t.TempDir()
	unlock, mine, err := lockWake(dir)
	if err != nil || !mine {
		t.Fatalf("first: %v %v", mine, err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "mcp-waking", "nonce"))
	if _, mine, err := lockWake(dir); err != nil || mine {
		t.Fatalf("second, while held: %v %v", mine, err)
	}
	unlock()
	unlock, mine, err = lockWake(dir)
	if err != nil || !mine {
		t.Fatalf("after unlock: %v %v", mine, err)
	}
	second, _ := os.ReadFile(filepath.Join(dir, "mcp-waking", "nonce"))
	if len(first) == 0 || string(first) == string(second) {
		t.Errorf("nonces %q and %q", first, second)
	}
	old := time.Now().Add(-wakeWait - time.Minute)
	os.Chtimes(filepath.Join(dir, "mcp-waking"), old, old)
	if _, mine, err := lockWake(dir); err != nil || !mine {
		t.Errorf("a stale lock should be taken over: %v %v", mine, err)
	}
	unlock()
	if _, err := os.Stat(filepath.Join(dir, "mcp-waking")); err == nil {
		t.Error("unlock left the lock")
	}
}
