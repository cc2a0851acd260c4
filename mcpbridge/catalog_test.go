package mcpbridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

func TestCatalogPersistsByConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := discovery.Server{Name: "git hub/x", Command: "srv", Args: []string{"a"}, Env: map[string]string{"K": "v"}}
	tools := []*mcp.Tool{{Name: "create_issue", Description: "Create an issue", InputSchema: map[string]any{"type": "object"}}}
	c := newToolCatalog(dir, nil)
	c.put(cfg, tools, "1.2.3")
	if got, stale, ok := c.get(cfg); !ok || stale || len(got) != 1 {
		t.Fatalf("in memory: %v %v %v", got, stale, ok)
	}
	// A later process reads it back, stale until listed again.
	later := newToolCatalog(dir, nil)
	got, stale, ok := later.get(cfg)
	if !ok || !stale || len(got) != 1 || got[0].Name != "create_issue" {
		t.Fatalf("from disk: %v %v %v", got, stale, ok)
	}
	if later.entries[cfg.Name].version != "1.2.3" {
		t.Errorf("version %q", later.entries[cfg.Name].version)
	}
	// Defined otherwise now: not used.
	changed := cfg
	changed.Args = []string{"b"}
	if _, _, ok := newToolCatalog(dir, nil).get(changed); ok {
		t.Fatal("a catalog entry of another definition was used")
	}
	// The description is not part of the key.
	described := cfg
	described.Description = "new words"
	if _, _, ok := newToolCatalog(dir, nil).get(described); !ok {
		t.Fatal("a new description dropped the catalog entry")
	}
	// A damaged file is ignored.
	os.WriteFile(c.path(cfg.Name), []byte("{not json"), 0o600)
	if _, _, ok := newToolCatalog(dir, nil).get(cfg); ok {
		t.Fatal("a damaged catalog file was used")
	}
	if base := filepath.Base(c.path("../../etc/passwd")); strings.Contains(base, "/") || !strings.HasPrefix(base, "______etc_passwd-") {
		t.Errorf("catalog file name %q", base)
	}
	// No directory: memory only.
	mem := newToolCatalog("", nil)
	mem.put(cfg, tools, "")
	if _, _, ok := newToolCatalog("", nil).get(cfg); ok {
		t.Fatal("a memory-only catalog was shared")
	}
}

// TestSearchFromCatalogAndNotes searches servers that are not running:
// the first search starts them and fills the catalog on disk; a new
// bridge answers from that catalog; a server that cannot start and one
// still starting are named in the notes.
func TestSearchFromCatalogAndNotes(t *testing.T) {
	reg := stubRegistry(t)
	self, _ := os.Executable()
	// sleepy's command is a link to the stub, removed once the catalog
	// holds its tools: a search that finds them after that read them
	// from the catalog.
	sleepy := filepath.Join(t.TempDir(), "sleepy")
	if err := os.Symlink(self, sleepy); err != nil {
		t.Fatal(err)
	}
	home := filepath.Dir(reg.StateDir()) // stubRegistry's state directory: ~/MCPs
	write(t, filepath.Join(home, "MCPs", "more.json"), `{"mcpServers": {
		"broken": {"command": "/nonexistent/server"},
		"sleepy": {"command": "`+sleepy+`", "env": {"`+stubServerEnv+`": "1", "`+stubStartDelayEnv+`": "4000"}}
	}}`)
	old := searchWait
	searchWait = 1500 * time.Millisecond
	t.Cleanup(func() { searchWait = old })
	search := `from mcp import runtime
hits = runtime.search_tool_docs_sync('add two numbers', limit=10)
print([h['server'] + '.' + h['tool'] for h in hits])
print(len(hits.notes))`
	cs, _ := connectClient(t, Options{Registry: reg})
	_, text, _ := call(t, cs, map[string]any{"code": search})
	if !strings.Contains(text, ".get-sum'") || !strings.Contains(text, "search_tool_docs: server 'broken' was not searched") ||
		!strings.Contains(text, "search_tool_docs: server 'sleepy' is still starting") {
		t.Fatalf("first search:\n%s", text)
	}
	files, _ := filepath.Glob(filepath.Join(home, "MCPs", "catalog", "*.json"))
	if len(files) < 3 { // stub, Stub Two, noisy (sleepy once it has started)
		t.Fatalf("catalog files %v", files)
	}
	// A new bridge on the same state directory answers from the catalog,
	// sleepy included once its start finished (its tools listed in the
	// background, however long that took) and though it can no longer
	// start: its tools come from the catalog, with no server waited for.
	listed := newToolCatalog(filepath.Join(home, "MCPs", "catalog"), nil).path("sleepy")
	waitForWithin(t, time.Minute, "sleepy's tools in the catalog", func() bool {
		_, err := os.Stat(listed)
		return err == nil
	})
	if err := os.Remove(sleepy); err != nil {
		t.Fatal(err)
	}
	cs2, _ := connectClient(t, Options{Registry: discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})})
	_, text, _ = call(t, cs2, map[string]any{"code": search})
	if !strings.Contains(text, "'sleepy.get-sum'") || strings.Contains(text, "server 'sleepy'") || strings.Contains(text, "still starting") {
		t.Fatalf("search from the catalog:\n%s", text)
	}
}
