package servers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// TestResultShapesInDocs: a tool's docs say what it returns: the stub's
// get-sum its output schema's shape (in its signature too); echo, which
// declares none, the shape observed of its JSON text results once seen,
// kept for the next Set; the stubs of the server show both.
func TestResultShapesInDocs(t *testing.T) {
	home := t.TempDir()
	self, _ := os.Executable()
	write(t, filepath.Join(home, "MCPs", "stub.json"), `{"mcpServers": {"stub": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}}}}`)
	reg := discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})
	ctx := context.Background()
	docsOf := func(set *Set) map[string]toolDoc {
		t.Helper()
		route := set.NewRoute(&Hooks{})
		defer route.Close()
		res, err := route.Docs(ctx, "stub", "", false)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]toolDoc{}
		for _, d := range res.(map[string]any)["docs"].([]toolDoc) {
			m[d.Tool] = d
		}
		return m
	}

	set := New(&Options{Registry: reg, ObserveResults: true})
	route := set.NewRoute(&Hooks{})
	for _, msg := range []string{`{"id": 1, "tags": ["a"]}`, `{"id": 2, "tags": []}`} {
		if _, warnings, err := route.CallTool(ctx, "stub", "echo", map[string]any{"message": msg}); err != nil || warnings != nil {
			t.Fatalf("echo: %v %v", warnings, err)
		}
	}
	if _, warnings, err := route.CallTool(ctx, "stub", "get-sum", map[string]any{"a": 1, "b": 2}); err != nil || warnings != nil {
		t.Fatalf("get-sum: %v %v", warnings, err)
	}
	route.Close()
	set.Close()

	set = New(&Options{Registry: reg, ObserveResults: true})
	defer set.Close()
	docs := docsOf(set)
	if d := docs["get-sum"]; d.Returns != `{"sum": int}` || d.ReturnsObserved != 0 || !strings.HasSuffix(d.Signature, `) -> {"sum": int}`) {
		t.Errorf("get-sum: %+v", d)
	}
	if d := docs["echo"]; d.Returns != `{"id": int, "tags": list[str]}` || d.ReturnsObserved != 2 {
		t.Errorf("echo: %+v", d)
	}
	route = set.NewRoute(&Hooks{})
	defer route.Close()
	stubs, err := route.Stubs(ctx, "stub")
	for _, want := range []string{
		"# MCP server 'stub': load it with run_python's servers=['stub'], then await mcp_stub.<tool>(...)\n",
		"\n# returns: observed in 2 calls\nasync def echo(*, message: str) -> {\"id\": int, \"tags\": list[str]}:\n    \"Echo the provided message\"\n",
		"\nasync def get_sum(*, a: int, b: int) -> {\"sum\": int}:\n    \"Add two numbers and return their sum\"\n",
		"\nasync def crash() -> Any:\n",
	} {
		if err != nil || !strings.Contains(stubs, want) {
			t.Errorf("stubs lack %q: %v\n%s", want, err, stubs)
		}
	}
	if _, err := route.Stubs(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "is not configured") {
		t.Errorf("stubs of no server: %v", err)
	}

	off := New(&Options{Registry: reg})
	defer off.Close()
	if d := docsOf(off)["echo"]; d.Returns != "" {
		t.Errorf("with results not observed, echo's docs: %+v", d)
	}
}

// TestResultChecked: structured content that does not match the tool's
// output schema is one warning naming where, the result unchanged; none
// at all is one too; a schema that cannot be compiled or rendered never
// fails anything.
func TestResultChecked(t *testing.T) {
	var rs results
	tool := &mcp.Tool{Name: "count", OutputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"count": map[string]any{"type": "integer"}}, "required": []any{"count"}}}
	bad := &mcp.CallToolResult{StructuredContent: map[string]any{"count": "many"}}
	w := rs.after("s", "1", "count", tool, bad)
	if len(w) != 1 || !strings.HasPrefix(w[0], "s.count returned a result that does not match its output schema: ") || !strings.Contains(w[0], "count") {
		t.Errorf("a mismatch: %q", w)
	}
	if bad.StructuredContent.(map[string]any)["count"] != "many" {
		t.Error("the result was changed")
	}
	if w := rs.after("s", "1", "count", tool, &mcp.CallToolResult{StructuredContent: map[string]any{"count": 3}}); w != nil {
		t.Errorf("a match: %q", w)
	}
	if w := rs.after("s", "1", "count", tool, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3"}}}); len(w) != 1 || !strings.Contains(w[0], "no structured content") {
		t.Errorf("no structured content: %q", w)
	}
	if w := rs.after("s", "1", "count", tool, &mcp.CallToolResult{IsError: true}); w != nil {
		t.Errorf("an error result: %q", w)
	}
	odd := &mcp.Tool{Name: "odd", OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": "not a schema"}}}
	if w := rs.after("s", "1", "odd", odd, &mcp.CallToolResult{StructuredContent: map[string]any{"x": 1}}); w != nil {
		t.Errorf("an unusable schema: %q", w)
	}
	if text, n := rs.returns("s", odd); !strings.HasPrefix(text, "(not shown: ") || n != 0 {
		t.Errorf("an unusable schema's docs: %q %d", text, n)
	}
}

// BenchmarkProxiedCallObserved times a proxied call of the stub's echo
// answering a 2 KiB JSON object, with its results observed and without:
// what recording a shape adds to a call (BENCHMARKS.md item 26).
func BenchmarkProxiedCallObserved(b *testing.B) {
	home := b.TempDir()
	self, _ := os.Executable()
	write(b, filepath.Join(home, "MCPs", "stub.json"), `{"mcpServers": {"stub": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}}}}`)
	reg := discovery.NewRegistry(discovery.Options{Home: home, Cwd: b.TempDir(), AllowSelf: true})
	var items []string
	for i := range 20 {
		items = append(items, fmt.Sprintf(`{"id": %d, "title": "issue number %d", "labels": ["bug", "ui"], "open": true, "score": %d.5}`, i, i, i))
	}
	msg := `{"items": [` + strings.Join(items, ", ") + `], "next": "cursor-1"}`
	ctx := context.Background()
	for _, observe := range []bool{false, true} {
		b.Run(fmt.Sprintf("observe=%v", observe), func(b *testing.B) {
			set := New(&Options{Registry: reg, ObserveResults: observe})
			defer set.Close()
			route := set.NewRoute(&Hooks{})
			defer route.Close()
			for range 20 {
				route.CallTool(ctx, "stub", "echo", map[string]any{"message": msg})
			}
			for b.Loop() {
				if _, _, err := route.CallTool(ctx, "stub", "echo", map[string]any{"message": msg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDocsSize reports, over the tools of the output schema corpus
// (three real servers), the bytes per tool of what tools/list gives
// (description and input and output schemas, as JSON), of the same tools'
// stubs, and of an output schema against its shape (BENCHMARKS.md item
// 26; tokens are about a quarter of bytes).
func BenchmarkDocsSize(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "shapes", "testdata", "outputschemas", "*.json"))
	var listed, stubs, schemas, shapesB, tools int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var c struct {
			Tools []*mcp.Tool `json:"tools"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
		var rs results
		for _, d := range toolDocs("s", "s", c.Tools, false, func(t *mcp.Tool) (string, int) { return rs.returns("s", t) }) {
			stubs += len(fmt.Sprintf("async def %s:\n    %q\n", strings.TrimPrefix(d.Signature, "mcp_s."), d.Summary))
			shapesB += len(d.Returns)
		}
		for _, t := range c.Tools {
			j, _ := json.Marshal(t)
			o, _ := json.Marshal(t.OutputSchema)
			listed, schemas = listed+len(j), schemas+len(o)
		}
		tools += len(c.Tools)
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(listed)/float64(tools), "tools/list-B/tool")
	b.ReportMetric(float64(stubs)/float64(tools), "stub-B/tool")
	b.ReportMetric(float64(schemas)/float64(tools), "outputSchema-B/tool")
	b.ReportMetric(float64(shapesB)/float64(tools), "shape-B/tool")
}
