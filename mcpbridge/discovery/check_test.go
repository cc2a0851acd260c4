package discovery

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckConfigFiles reports each discovered file in discovery order: a
// good one with its servers, syntax errors at their line and column
// (comments, a byte order mark and TOML included), malformed entries, and
// entries skipped by design.
func TestCheckConfigFiles(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	mcps := filepath.Join(home, "MCPs")
	write(t, filepath.Join(mcps, "a.json"), `{"mcpServers": {"one": {"command": "x"}, "two": {"command": "y"}}}`)
	// The comment before the fault is blanked, not removed: the position
	// is the file's.
	write(t, filepath.Join(mcps, "b.json"), "{\n  /* a\n     comment */ \"mcpServers\": {\n    \"three\": {\"command\": \"z\"},,\n  }\n}\n")
	write(t, filepath.Join(mcps, "c.toml"), "[mcp_servers.t]\ncommand = \"x\"\nargs = [1,\n")
	write(t, filepath.Join(mcps, "d.json"), "\xef\xbb\xbf{\"mcpServers\": }")
	write(t, filepath.Join(mcps, "e.json"), "{\"mcpServers\": {\n  \"é\": {\"command\": \"x\"")
	write(t, filepath.Join(mcps, "ignored.txt"), "not read")
	write(t, filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {
		"one": {"command": "again"},
		"bad": {"args": ["x"]},
		"badargs": {"command": "x", "args": "x"},
		"remote": {"url": "https://example.com/mcp"},
		"self": {"command": "mcp-server-code-execution-mode", "args": ["run"]},
		"four": {"command": "w"}
	}}`)
	r := NewRegistry(Options{Home: home, Cwd: cwd})
	got := r.Check()
	var paths []string
	for _, f := range got {
		paths = append(paths, f.Path)
	}
	wantPaths := []string{filepath.Join(mcps, "a.json"), filepath.Join(mcps, "b.json"), filepath.Join(mcps, "c.toml"),
		filepath.Join(mcps, "d.json"), filepath.Join(mcps, "e.json"), filepath.Join(home, ".cursor", "mcp.json")}
	if !slices.Equal(paths, wantPaths) {
		t.Fatalf("files %v; want %v", paths, wantPaths)
	}
	type pos struct {
		line, col int
		msg       string
	}
	for i, want := range []pos{
		{0, 0, ""},
		{4, 31, "invalid character ',' looking for beginning of object key string"},
		{3, 11, "expected value"},
		{1, 16, "invalid character '}' looking for beginning of value"},
		{2, 23, "unexpected end of the file"},
	} {
		f := got[i]
		if want.msg == "" {
			if f.Err != nil || !slices.Equal(f.Servers, []string{"one", "two"}) {
				t.Errorf("%s: %v, servers %v", f.Path, f.Err, f.Servers)
			}
			continue
		}
		if f.Err == nil || f.Line != want.line || f.Column != want.col || !strings.Contains(f.Err.Error(), want.msg) {
			t.Errorf("%s: %d:%d: %v; want %d:%d: %s", f.Path, f.Line, f.Column, f.Err, want.line, want.col, want.msg)
		}
		if strings.Contains(f.Err.Error(), "parsing") {
			t.Errorf("%s: the error %q repeats what the report says", f.Path, f.Err)
		}
	}
	cursor := got[5]
	if cursor.Err != nil || !slices.Equal(cursor.Servers, []string{"four"}) {
		t.Fatalf("cursor: %v, servers %v", cursor.Err, cursor.Servers)
	}
	entries := map[string]EntryReport{}
	for _, e := range cursor.Entries {
		entries[e.Server] = e
	}
	for name, want := range map[string]struct {
		benign bool
		msg    string
	}{
		"bad":     {false, "no command"},
		"badargs": {false, "args is not a list"},
		"remote":  {true, "remote (url) servers are not proxied"},
		"self":    {true, "would start this bridge"},
		"one":     {true, "defined earlier in " + filepath.Join(mcps, "a.json")},
	} {
		e, ok := entries[name]
		if !ok || e.Benign != want.benign || e.Err == nil || !strings.Contains(e.Err.Error(), want.msg) {
			t.Errorf("entry %q: %+v; want benign %v, %q", name, e, want.benign, want.msg)
		}
	}
	if len(cursor.Entries) != 5 {
		t.Errorf("entries %+v; want 5", cursor.Entries)
	}
}

// TestConfigErrorPositions covers the positions of the other JSON errors
// and of characters wider than a byte.
func TestConfigErrorPositions(t *testing.T) {
	r := NewRegistry(Options{Home: "/home/nobody", Cwd: "/work"})
	for _, tt := range []struct {
		data      string
		line, col int
		msg       string
	}{
		{"{\"a\": \"ééé\" x}", 1, 13, "invalid character 'x' after object key:value pair"},
		{"{}\n\n  {}", 3, 3, "'{' after the end of the document"},
		{"  [1, 2]", 1, 3, "the document is an array, not an object"},
		{"", 0, 0, "the file is empty"},
		{"{\"a\": 1, // comment\n}", 0, 0, ""}, // a trailing comma and a comment: fine
	} {
		_, err := r.parseConfig([]byte(tt.data), "/x/mcp.json", false)
		if tt.msg == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.data, err)
			}
			continue
		}
		var syn *syntaxError
		if !errors.As(err, &syn) || syn.line != tt.line || syn.column != tt.col || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: %v (%+v); want %d:%d %s", tt.data, err, syn, tt.line, tt.col, tt.msg)
		}
	}
	if line, col := lineColumn([]byte("ab\ncd"), 5); line != 2 || col != 3 {
		t.Errorf("lineColumn at the end: %d:%d", line, col)
	}
}
