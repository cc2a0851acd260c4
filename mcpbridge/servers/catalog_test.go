package servers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

func TestCatalogPersistsByConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := discovery.Server{Name: "git hub/x", Command: "srv", Args: []string{"a"}, Env: map[string]string{"K": "v"}}
	tools := []*mcp.Tool{{Name: "create_issue", Description: "Create an issue", InputSchema: map[string]any{"type": "object"}}}
	c := newCatalog(dir, nil)
	c.put(cfg, tools, "1.2.3")
	if got, stale, ok := c.get(cfg); !ok || stale || len(got) != 1 {
		t.Fatalf("in memory: %v %v %v", got, stale, ok)
	}
	// A later process reads it back, stale until listed again.
	later := newCatalog(dir, nil)
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
	if _, _, ok := newCatalog(dir, nil).get(changed); ok {
		t.Fatal("a catalog entry of another definition was used")
	}
	// The description is not part of the key.
	described := cfg
	described.Description = "new words"
	if _, _, ok := newCatalog(dir, nil).get(described); !ok {
		t.Fatal("a new description dropped the catalog entry")
	}
	// A damaged file is ignored.
	os.WriteFile(c.path(cfg.Name), []byte("{not json"), 0o600)
	if _, _, ok := newCatalog(dir, nil).get(cfg); ok {
		t.Fatal("a damaged catalog file was used")
	}
	if base := filepath.Base(c.path("../../etc/passwd")); strings.Contains(base, "/") || !strings.HasPrefix(base, "______etc_passwd-") {
		t.Errorf("catalog file name %q", base)
	}
	// No directory: memory only.
	mem := newCatalog("", nil)
	mem.put(cfg, tools, "")
	if _, _, ok := newCatalog("", nil).get(cfg); ok {
		t.Fatal("a memory-only catalog was shared")
	}
}
