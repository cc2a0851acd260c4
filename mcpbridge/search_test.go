package mcpbridge

import (
	"path/filepath"
	"strings"
	"testing"
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
