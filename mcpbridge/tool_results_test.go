package mcpbridge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// toolResultsCode calls the stub's tools three ways and prints each
// result as JSON, one a line: a structured result, a text result, and a
// result that is an error (caught when it is raised).
const toolResultsCode = `import json
from mcp import runtime
async def show(call):
    try:
        print(json.dumps(await call))
    except MCPError as e:
        print(json.dumps({"raised": type(e).__name__, "message": str(e)}))
await show(mcp_stub.get_sum(a=2, b=3))
await show(runtime.call_tool("stub", "echo", {"message": "hi"}))
await show(mcp_stub.read_text_file(path="/x"))`

// stubMeta is the _meta the stub server's results carry.
const stubMeta = `{"io.modelcontextprotocol/serverInfo": {"name": "stub", "version": "1"}}`

// TestToolResults runs proxied calls under both MCP_BRIDGE_TOOL_RESULTS
// modes through the bridge, its sandbox API in a local python3 and the
// stub server: simple returns the structured result, the text, and
// raises for an error; raw returns the whole CallToolResult dict, as the
// original bridge did, errors included, in the original's key order.
func TestToolResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode string
		want []string
	}{
		{"", []string{
			`{"sum": 5}`,
			`"hi"`,
			`{"raised": "MCPError", "message": "stub.read_text_file failed: no such file: /x"}`,
		}},
		{ToolResultsSimple, []string{
			`{"sum": 5}`,
			`"hi"`,
			`{"raised": "MCPError", "message": "stub.read_text_file failed: no such file: /x"}`,
		}},
		// The stub (a go-sdk server) sends _meta and resultType too;
		// raw keeps every field the server sent.
		{ToolResultsRaw, []string{
			`{"_meta": ` + stubMeta + `, "content": [{"type": "text", "text": "{\"sum\":5}"}], "structuredContent": {"sum": 5}, "isError": false, "resultType": "complete"}`,
			`{"_meta": ` + stubMeta + `, "content": [{"type": "text", "text": "hi"}], "isError": false, "resultType": "complete"}`,
			`{"_meta": ` + stubMeta + `, "content": [{"type": "text", "text": "no such file: /x"}], "isError": true, "resultType": "complete"}`,
		}},
	}
	for _, tt := range tests {
		t.Run("mode="+tt.mode, func(t *testing.T) {
			cs, _ := connectClient(t, Options{ToolResults: tt.mode, Registry: stubRegistry(t)})
			res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": toolResultsCode})
			if res.IsError {
				t.Fatalf("the call failed: %s", text)
			}
			got := strings.Split(text, "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(got), len(tt.want), text)
			}
			for i := range got {
				// The same JSON value, and the same text: the keys in
				// the original's order.
				var g, w any
				if json.Unmarshal([]byte(got[i]), &g) != nil || json.Unmarshal([]byte(tt.want[i]), &w) != nil || !reflect.DeepEqual(g, w) || got[i] != tt.want[i] {
					t.Errorf("result %d:\n got %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestToolResultsReachTheSandbox checks that the setting is in the code
// that configures a sandbox's proxies.
func TestToolResultsReachTheSandbox(t *testing.T) {
	for mode, want := range map[string]string{"": `"tool_results":"simple"`, ToolResultsRaw: `"tool_results":"raw"`} {
		b := New(nil, &Options{ToolResults: mode, Registry: stubRegistry(t)})
		code := b.configureCode(nil, nil)
		b.Close()
		if !strings.Contains(code, strings.ReplaceAll(want, `"`, `\"`)) {
			t.Errorf("ToolResults %q: the configure code %s lacks %s", mode, code, want)
		}
	}
}
