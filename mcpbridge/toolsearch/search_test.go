package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// A scored is a doc Rank found, with its score.
type scored struct {
	Doc
	Score int
}

// searchTools is Rank of docs, schemas[i] (when given) being docs[i]'s
// schema, as the docs found.
func searchTools(query string, docs []Doc, schemas []any, limit int) []scored {
	docs = slices.Clone(docs)
	for i := range docs {
		if i < len(schemas) {
			docs[i].Schema = schemas[i]
		}
	}
	var out []scored
	for _, h := range Rank(query, docs, limit) {
		out = append(out, scored{docs[h.Doc], h.Score})
	}
	return out
}

// TestWords splits on case, punctuation, "_" and "-", and stems with
// Snowball: "files" and "file", "issues" and "issue", "created" and
// "create" meet.
func TestWords(t *testing.T) {
	var got []string
	splitWords("readTextFile's get-sum, listed DIRECTORIES_now files issues created running k8s", func(w string) { got = append(got, stemWord(w)) })
	want := []string{"read", "text", "file", "s", "get", "sum", "list", "directori", "now", "file", "issu", "creat", "run", "k8s"}
	if !slices.Equal(got, want) {
		t.Fatalf("words = %q, want %q", got, want)
	}
	for _, pair := range [][2]string{{"file", "files"}, {"issue", "issues"}, {"create", "created"}, {"run", "running"}} {
		if stemWord(pair[0]) != stemWord(pair[1]) {
			t.Errorf("%q and %q stem apart: %q, %q", pair[0], pair[1], stemWord(pair[0]), stemWord(pair[1]))
		}
	}
}

// TestSearchTools ranks tools by a query in the agent's own words: the
// name counts most, then parameter names, then the description, and
// synonyms count less than the word itself.
func TestSearchTools(t *testing.T) {
	docs := []Doc{
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
	tools := func(docs []scored) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.Tool)
		}
		return out
	}
	for _, tt := range []struct {
		query string
		limit int
		want  []string // the first results; nil: none at all
	}{
		{"read a file's contents", 0, []string{"read_text_file"}},
		{"add two numbers", 0, []string{"get-sum"}},
		{"show the folders", 0, []string{"list_directory"}},
		{"file", 1, []string{"write_file"}}, // the shorter name
		{"file", 0, []string{"write_file", "read_text_file"}},
		{"the of and", 0, nil},
		{"zebra", 0, nil},
		{"", 0, nil},
	} {
		got := searchTools(tt.query, docs, schemas, tt.limit)
		if tt.want == nil && got != nil || len(got) < len(tt.want) || !slices.Equal(tools(got[:len(tt.want)]), tt.want) {
			t.Errorf("%q: %q, want %q first", tt.query, tools(got), tt.want)
		}
		if tt.limit > 0 && len(got) > tt.limit {
			t.Errorf("%q: %d results, limit %d", tt.query, len(got), tt.limit)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score || got[i].Score <= 0 {
				t.Errorf("%q: scores %d then %d", tt.query, got[i-1].Score, got[i].Score)
			}
		}
	}
}

// TestSearchToolsBadInput: queries and tools no agent should send still
// give sensible results in bounded time.
func TestSearchToolsBadInput(t *testing.T) {
	docs := []Doc{
		{Server: "fs", Tool: "read_text_file", Description: "Read the complete contents of a file as text"},
		{Server: "fs", Tool: "write_file", Description: "Create a new file or overwrite an existing one"},
		{Server: "db", Tool: "query", Description: "Run a read-only SQL query"},
		{Server: "web", Tool: "render", Description: "Render an HTML template"},
		{Server: "empty", Tool: "nothing", Description: ""},
		{Server: "big", Tool: "huge_tool", Description: strings.Repeat("lorem ipsum dolor sit amet ", 4000)}, // ~100 KB
		{Server: "intl", Tool: "café_lookup", Description: "Trouve un café près d'ici; 東京の地図 🗺️"},
	}
	schemas := make([]any, len(docs))
	first := func(q string) string {
		got := searchTools(q, docs, schemas, 5)
		if len(got) == 0 {
			return ""
		}
		return got[0].Tool
	}
	for _, tt := range []struct{ query, want string }{
		{"", ""},
		{"   \t\n", ""},
		{"'; DROP TABLE tools; --", "query"}, // SQL's words: the keywords of this (postgres') query tool hold them
		{"{{7*7}}", ""},
		{"</script><script>alert(1)</script>", "*"}, // its words ("script", "alert") may match
		{"run a SQL query'; DROP TABLE users; --", "query"},
		{"read a file {{7*7}} </script>", "read_text_file"},
		{"café", "café_lookup"},
		{"東京の地図", "café_lookup"},
		{"🗺️", ""},
		{"lorem ipsum", "huge_tool"},
		{"écrire fichier", ""},
		{"près", "café_lookup"},
	} {
		if got := first(tt.query); got != tt.want && tt.want != "*" {
			t.Errorf("%q: first %q, want %q", tt.query, got, tt.want)
		}
	}
	// A 1 MB query: only its beginning counts, and it stays fast.
	big := "read a text file " + strings.Repeat("x", 1<<20)
	start := time.Now()
	if got := first(big); got != "read_text_file" {
		t.Errorf("1 MB query: first %q, want read_text_file", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("1 MB query: %v", d)
	}
	if got := first(strings.Repeat("zebra ", 200_000)); got != "" {
		t.Errorf("1 MB of one unknown word: %q", got)
	}
}

// TestSearchToolsMany ranks 10,000 tools against a 1 MB query in bounded
// time (indexing them included). The bounds catch work that grows with
// the query times the tools (minutes here), not a speed target: under
// -race on a busy 2-core machine the 1 MB query takes 0.6–2.6 s; its
// speed is BenchmarkSearchTools'.
func TestSearchToolsMany(t *testing.T) {
	var docs []Doc
	for i := range 10_000 {
		docs = append(docs, Doc{
			Server:      fmt.Sprintf("server%d", i%50),
			Tool:        fmt.Sprintf("tool_%d_%s", i, []string{"read", "write", "list", "delete"}[i%4]),
			Description: fmt.Sprintf("Tool number %d: it does %s things with files and directories.", i, []string{"read", "write", "list", "delete"}[i%4]),
		})
	}
	docs[7777].Tool, docs[7777].Description = "launch_rocket", "Launch a rocket into orbit"
	schemas := make([]any, len(docs))
	query := "launch the rocket " + strings.Repeat("please now ", 100_000)
	synonymsFor(true) // the tables are built once per process, not per query (BenchmarkWordNetLoad)
	start := time.Now()
	got := searchTools(query, docs, schemas, 5)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("10,000 tools, 1 MB query: %v", d)
	}
	if len(got) == 0 || got[0].Tool != "launch_rocket" {
		t.Errorf("10,000 tools: %v", got)
	}
	start = time.Now()
	got = searchTools("delete files", docs, schemas, 5)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("10,000 tools, indexed: %v", d)
	}
	if len(got) != 5 || !strings.HasSuffix(got[0].Tool, "_delete") {
		t.Errorf("delete files: %v", got)
	}
}

// TestSearchIndexCache: a changed doc in the same slice is indexed again.
func TestSearchIndexCache(t *testing.T) {
	docs := []Doc{{Server: "s", Tool: "alpha", Description: "first"}, {Server: "s", Tool: "beta", Description: "second"}}
	schemas := make([]any, len(docs))
	if got := searchTools("gamma", docs, schemas, 0); len(got) != 0 {
		t.Fatalf("gamma: %v", got)
	}
	docs[1].Tool = "gamma"
	if got := searchTools("gamma", docs, schemas, 0); len(got) != 1 || got[0].Tool != "gamma" {
		t.Fatalf("gamma after the change: %v", got)
	}
}

func TestSchemaProps(t *testing.T) {
	for _, tt := range []struct {
		schema any
		want   []string
	}{
		{map[string]any{"properties": map[string]any{"b": true, "a": map[string]any{"description": "the a"}}}, []string{"a: the a", "b: "}},
		{json.RawMessage(`{"properties":{"x":{}}}`), []string{"x: "}},
		{json.RawMessage(`[1]`), nil},
		{map[string]any{"properties": []any{"a"}}, nil},
		{nil, nil},
	} {
		var got []string
		for _, p := range schemaProps(tt.schema) {
			got = append(got, p.name+": "+p.desc)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("schemaProps(%v) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

// TestActionSynonyms: the plain-English groups widen a word to their
// tools' words (TestWordTablesData checks the groups' words).
func TestActionSynonyms(t *testing.T) {
	has := func(word, want string) bool {
		for _, s := range synonymsFor(true).hand[stemWord(word)] {
			if s.term == stemWord(want) {
				return s.hand
			}
		}
		return false
	}
	for _, c := range [][2]string{{"halt", "stop"}, {"scrap", "delete"}, {"folder", "directory"}, {"altitude", "elevation"}, {"paint", "image"}, {"nuke", "kill"}, {"latitude", "geocode"}} {
		if !has(c[0], c[1]) {
			t.Errorf("%q does not widen to %q: %v", c[0], c[1], synonymsFor(true).hand[stemWord(c[0])])
		}
	}
}
