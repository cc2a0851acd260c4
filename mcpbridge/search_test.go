package mcpbridge

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestWords splits on case, punctuation, "_" and "-", and stems; the
// "s" of a possessive is a word of its own (a stopword in queries).
func TestWords(t *testing.T) {
	got := words("readTextFile's get-sum, listed DIRECTORIES_now")
	want := []string{"read", "text", "file", "s", "get", "sum", "list", "directory", "now"}
	if !slices.Equal(got, want) {
		t.Fatalf("words = %q, want %q", got, want)
	}
}

// TestSearchTools ranks tools by a query in the agent's own words: the
// name counts most, then parameter names, then the description, and
// synonyms count less than the word itself.
func TestSearchTools(t *testing.T) {
	docs := []toolDoc{
		{Server: "fs", Tool: "read_text_file", Description: "Read the complete contents of a file as text"},
		{Server: "fs", Tool: "write_file", Description: "Create a new file or overwrite an existing one"},
		{Server: "fs", Tool: "list_directory", Description: "List the entries of a directory"},
		{Server: "stub", Tool: "get-sum", Description: "Add two numbers and return their sum"},
		{Server: "stub", Tool: "echo", Description: "Echo the provided message"},
	}
	schemas := []any{
		map[string]any{"properties": map[string]any{"path": map[string]any{}}},
		json.RawMessage(`{"properties":{"path":{},"content":{}}}`),
		nil,
		map[string]any{"properties": map[string]any{"a": map[string]any{}, "b": map[string]any{}}},
		"not a schema",
	}
	tools := func(docs []toolDoc) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.Tool)
		}
		return out
	}
	for _, tt := range []struct {
		query string
		limit int
		want  []string
	}{
		{"read a file's contents", 0, []string{"read_text_file", "write_file", "get-sum"}}, // "get" is a synonym of "read"
		{"add two numbers", 0, []string{"get-sum", "write_file"}},
		{"show the folders", 0, []string{"list_directory"}},
		{"file", 1, []string{"read_text_file"}},
		{"the of and", 0, nil},
		{"zebra", 0, nil},
	} {
		got := searchTools(tt.query, docs, schemas, tt.limit)
		if !slices.Equal(tools(got), tt.want) {
			t.Errorf("%q: %q, want %q", tt.query, tools(got), tt.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score || got[i].Score <= 0 {
				t.Errorf("%q: scores %d then %d", tt.query, got[i-1].Score, got[i].Score)
			}
		}
	}
}

func TestSchemaParams(t *testing.T) {
	for _, tt := range []struct {
		schema any
		want   []string
	}{
		{map[string]any{"properties": map[string]any{"b": true, "a": true}}, []string{"a", "b"}},
		{json.RawMessage(`{"properties":{"x":{}}}`), []string{"x"}},
		{json.RawMessage(`[1]`), nil},
		{map[string]any{"properties": []any{"a"}}, nil},
		{nil, nil},
	} {
		if got := schemaParams(tt.schema); !slices.Equal(got, tt.want) {
			t.Errorf("schemaParams(%v) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}
