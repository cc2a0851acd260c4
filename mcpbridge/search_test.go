package mcpbridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// TestSearchWithOperatorKeywords: the operator's words find a tool of their
// own server that its own words do not, and a broken file is named in the
// search's notes while the search goes on.
func TestSearchWithOperatorKeywords(t *testing.T) {
	t.Parallel()
	reg := stubRegistry(t)
	path := filepath.Join(reg.StateDir(), "search_keywords.json")
	search := `from mcp import runtime
hits = runtime.search_tool_docs_sync('zorblax the quokka', limit=3)
print([h['server'] + '.' + h['tool'] for h in hits])
print(list(hits.notes))`
	cs, _ := connectClient(t, Options{Registry: reg})
	if _, text, _ := call(t, cs, map[string]any{"code": search}); strings.Contains(text, "stub.echo'") {
		t.Fatalf("found without keywords:\n%s", text)
	}
	write(t, path, `{"stub": {"echo": "zorblax quokka"}}`)
	_, text, _ := call(t, cs, map[string]any{"code": search})
	if !strings.HasPrefix(text, "['stub.echo'") || !strings.Contains(text, "\n[]") {
		t.Fatalf("with keywords:\n%s", text)
	}
	write(t, path, `{"stub": {"echo": 42}}`)
	_, text, _ = call(t, cs, map[string]any{"code": search})
	if strings.Contains(text, "'stub.echo'") || !strings.Contains(text, "search keywords file") || !strings.Contains(text, "is invalid") {
		t.Fatalf("broken file:\n%s", text)
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
	search := `from mcp import runtime
hits = runtime.search_tool_docs_sync('add two numbers', limit=10)
print([h['server'] + '.' + h['tool'] for h in hits])
print(len(hits.notes))`
	cs, _ := connectClient(t, Options{Registry: reg, searchWait: 1500 * time.Millisecond})
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
	waitForWithin(t, time.Minute, "sleepy's tools in the catalog", func() bool {
		listed, _ := filepath.Glob(filepath.Join(home, "MCPs", "catalog", "sleepy-*.json"))
		return len(listed) == 1
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
