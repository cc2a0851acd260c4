package toolsearch

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseKeywords(t *testing.T) {
	m, err := parseKeywords([]byte(`{"tickets": {"create_ticket": "bug, incident  report", "close": ["resolve", "done"]}, "empty": {}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := m["tickets"]["create_ticket"]; got != "bug incident report" {
		t.Errorf("words %q", got)
	}
	if got := m["tickets"]["close"]; got != "resolve done" {
		t.Errorf("list %q", got)
	}
	many, err := parseKeywords([]byte(`{"s": {"t": "`+strings.Repeat("w ", 500)+`"}}`), "")
	if err != nil || len(strings.Fields(many["s"]["t"])) != maxToolKeywords {
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
		{strings.Repeat(" ", maxKeywordsFileBytes+1), "larger than"},
	} {
		if _, err := parseKeywords([]byte(c.data), ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: %v, want an error with %q", c.data, err, c.want)
		}
	}
}

func TestKeywordsFile(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	// No file at the default place: no keywords, no error.
	f := NewKeywordsFile("", dir, log)
	if m, err := f.Current(); m != nil || err != nil {
		t.Fatalf("no file: %v %v", m, err)
	}
	// Written: read; rewritten: read again.
	path := filepath.Join(dir, "search_keywords.json")
	os.WriteFile(path, []byte(`{"s": {"t": "one"}}`), 0o600)
	if m, err := f.Current(); err != nil || m["s"]["t"] != "one" {
		t.Fatalf("written: %v %v", m, err)
	}
	os.WriteFile(path, []byte(`{"s": {"t": "one two three"}}`), 0o600)
	if m, err := f.Current(); err != nil || m["s"]["t"] != "one two three" {
		t.Fatalf("rewritten: %v %v", m, err)
	}
	// Broken: an error naming the file by its base name (sandbox code may
	// read it; where the file is stays in the operator's log), and no
	// keywords.
	os.WriteFile(path, []byte(`{"s": {"t": 1}}`), 0o600)
	if m, err := f.Current(); m != nil || err == nil || !strings.Contains(err.Error(), "search_keywords.json") || strings.Contains(err.Error(), dir) {
		t.Fatalf("broken: %v %v", m, err)
	}
	// Named by the operator and missing: said so.
	missing := filepath.Join(dir, "nope.json")
	if _, err := NewKeywordsFile(missing, dir, log).Current(); err == nil || !strings.Contains(err.Error(), "MCP_BRIDGE_SEARCH_KEYWORDS") {
		t.Fatalf("missing: %v", err)
	}
	// A directory is no file.
	if _, err := NewKeywordsFile(dir, dir, log).Current(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}

// TestKeywordsFileDeprecatedName: search_aliases.json, the file's former
// name, is read when search_keywords.json does not exist, with one
// warning that says it is deprecated and names the new one; the new name
// wins when both exist, without a warning.
func TestKeywordsFileDeprecatedName(t *testing.T) {
	dir := t.TempDir()
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	old := filepath.Join(dir, "search_aliases.json")
	os.WriteFile(old, []byte(`{"s": {"t": "old words"}}`), 0o600)
	f := NewKeywordsFile("", dir, log)
	if m, err := f.Current(); err != nil || m["s"]["t"] != "old words" || f.Path() != old {
		t.Fatalf("the old name: %v %v, file %s", m, err, f.Path())
	}
	f.Current()
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "deprecated") || !strings.Contains(lines[0], "search_aliases.json") || !strings.Contains(lines[0], "search_keywords.json") {
		t.Errorf("log: %q, want one line saying search_aliases.json is deprecated for search_keywords.json", logged.String())
	}
	logged.Reset()
	os.WriteFile(filepath.Join(dir, "search_keywords.json"), []byte(`{"s": {"t": "new words"}}`), 0o600)
	f = NewKeywordsFile("", dir, log)
	if m, err := f.Current(); err != nil || m["s"]["t"] != "new words" {
		t.Fatalf("both names: %v %v", m, err)
	}
	// Named by the operator, the old name is just a file.
	NewKeywordsFile(old, dir, log).Current()
	if logged.Len() != 0 {
		t.Errorf("log: %q, want nothing", logged.String())
	}
}
