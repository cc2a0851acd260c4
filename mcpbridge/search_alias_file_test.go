package mcpbridge

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAliases(t *testing.T) {
	m, err := parseAliases([]byte(`{"tickets": {"create_ticket": "bug, incident  report", "close": ["resolve", "done"]}, "empty": {}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := m["tickets"]["create_ticket"]; got != "bug incident report" {
		t.Errorf("words %q", got)
	}
	if got := m["tickets"]["close"]; got != "resolve done" {
		t.Errorf("list %q", got)
	}
	many, err := parseAliases([]byte(`{"s": {"t": "`+strings.Repeat("w ", 500)+`"}}`), "")
	if err != nil || len(strings.Fields(many["s"]["t"])) != maxAliasWords {
		t.Errorf("500 words: %d kept, %v", len(strings.Fields(many["s"]["t"])), err)
	}
	for _, c := range []struct{ data, want string }{
		{`{not json`, "want {"},
		{`["a"]`, "want {"},
		{`{"s": {"t": 3}}`, `server "s", tool "t": want a string of words or a list of strings`},
		{`{"s": {"t": [1, 2]}}`, `server "s", tool "t"`},
		{`{"": {"t": "w"}}`, "empty name"},
		{`{"s": {"": "w"}}`, `server "s": a tool with an empty name`},
		{`{"s": "words"}`, "want {"},
		{strings.Repeat(" ", maxAliasFileBytes+1), "larger than"},
	} {
		if _, err := parseAliases([]byte(c.data), ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: %v, want an error with %q", c.data, err, c.want)
		}
	}
}

func TestAliasFile(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	// No file at the default place: no aliases, no error.
	f := newAliasFile("", dir, log)
	if m, err := f.Current(); m != nil || err != nil {
		t.Fatalf("no file: %v %v", m, err)
	}
	// Written: read; rewritten: read again.
	path := filepath.Join(dir, "search_aliases.json")
	os.WriteFile(path, []byte(`{"s": {"t": "one"}}`), 0o600)
	if m, err := f.Current(); err != nil || m["s"]["t"] != "one" {
		t.Fatalf("written: %v %v", m, err)
	}
	os.WriteFile(path, []byte(`{"s": {"t": "one two three"}}`), 0o600)
	if m, err := f.Current(); err != nil || m["s"]["t"] != "one two three" {
		t.Fatalf("rewritten: %v %v", m, err)
	}
	// Broken: an error naming the file, and no aliases.
	os.WriteFile(path, []byte(`{"s": {"t": 1}}`), 0o600)
	if m, err := f.Current(); m != nil || err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("broken: %v %v", m, err)
	}
	// Named by the operator and missing: said so.
	missing := filepath.Join(dir, "nope.json")
	if _, err := newAliasFile(missing, dir, log).Current(); err == nil || !strings.Contains(err.Error(), "MCP_BRIDGE_SEARCH_ALIASES") {
		t.Fatalf("missing: %v", err)
	}
	// A directory is no file.
	if _, err := newAliasFile(dir, dir, log).Current(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}

// TestSearchWithOperatorAliases: the operator's words find a tool of their
// own server that its own words do not, and a broken file is named in the
// search's notes while the search goes on.
func TestSearchWithOperatorAliases(t *testing.T) {
	reg := stubRegistry(t)
	path := filepath.Join(reg.StateDir(), "search_aliases.json")
	search := `from mcp import runtime
hits = runtime.search_tool_docs_sync('zorblax the quokka', limit=3)
print([h['server'] + '.' + h['tool'] for h in hits])
print(list(hits.notes))`
	cs, _ := connectClientWith(t, defaultConfig(), reg)
	if _, text, _ := call(t, cs, map[string]any{"code": search}); strings.Contains(text, "stub.echo'") {
		t.Fatalf("found without aliases:\n%s", text)
	}
	write(t, path, `{"stub": {"echo": "zorblax quokka"}}`)
	_, text, _ := call(t, cs, map[string]any{"code": search})
	if !strings.HasPrefix(text, "['stub.echo'") || !strings.Contains(text, "\n[]") {
		t.Fatalf("with aliases:\n%s", text)
	}
	write(t, path, `{"stub": {"echo": 42}}`)
	_, text, _ = call(t, cs, map[string]any{"code": search})
	if strings.Contains(text, "'stub.echo'") || !strings.Contains(text, "search aliases file") || !strings.Contains(text, "is invalid") {
		t.Fatalf("broken file:\n%s", text)
	}
}
