//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPPoolInputDirFresh checks that a pooled sandbox, which copied
// MCP_BRIDGE_INPUT_DIR when it started, is not given to a session once
// the directory has changed: the session sees the directory as it is when
// it starts, and the spare started after the change is given as it is.
func TestHTTPPoolInputDirFresh(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		dir := t.TempDir()
		write := func(name, text string) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("a.txt", "one")
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_INPUT_DIR=" + dir}})
		waitFor(t, time.Minute, "the spare sandbox", func() bool { return len(b.containers(t)) == 1 })
		stale := b.containers(t)[0].ID

		write("b.txt", "two")
		list := "import os\nprint(sorted(os.listdir('/workspace/in')))"
		cs := b.session(t, nil)
		if text, isErr := runPython(t, cs, map[string]any{"code": list}); isErr || text != "['a.txt', 'b.txt']" {
			t.Fatalf("a session after the input directory changed sees %q (isError %v), want both files", text, isErr)
		}
		if host := b.sandboxOf(t, cs); strings.HasPrefix(stale, host) {
			t.Fatalf("the session got the spare started before the change (%s)", host)
		}

		// The spare started after the change is current: it is given.
		waitFor(t, time.Minute, "a new spare", func() bool { return len(b.containers(t)) == 2 })
		var spare string
		for _, c := range b.containers(t) {
			if host := b.sandboxOf(t, cs); !strings.HasPrefix(c.ID, host) {
				spare = c.ID
			}
		}
		cs2 := b.session(t, nil)
		if text, isErr := runPython(t, cs2, map[string]any{"code": list}); isErr || text != "['a.txt', 'b.txt']" {
			t.Fatalf("the next session sees %q (isError %v)", text, isErr)
		}
		if host := b.sandboxOf(t, cs2); !strings.HasPrefix(spare, host) {
			t.Fatalf("the next session's sandbox %s is not the current spare %.12s", host, spare)
		}
	})
}
