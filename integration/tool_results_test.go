//go:build integration

package integration

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// rawResultsCode calls real servers from the sandbox and prints each
// result as JSON, one a line: a text result, another, a structured
// result (through runtime.call_tool), and a result that is an error.
const rawResultsCode = `import json
from mcp import runtime
for call in (
    mcp_everything.echo(message="hi"),
    mcp_everything.get_sum(a=2, b=3),
    runtime.call_tool("everything", "get-structured-content", {"location": "Chicago"}),
    mcp_filesystem.read_text_file(path="/etc/passwd"),
):
    print(json.dumps(await call))`

// TestToolResultsRawWithRealServers runs the bridge binary with
// MCP_BRIDGE_TOOL_RESULTS=raw on one engine: proxied calls to
// server-everything and server-filesystem return the whole
// CallToolResult as a dict, as the original bridge did (content, then
// structuredContent when sent, then isError, always), and a result that
// is an error is returned, not raised.
func TestToolResultsRawWithRealServers(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		cs := connectBridge(t, e.Name(), "HOME="+home, "MCP_BRIDGE_TOOL_RESULTS=raw")
		text, isErr := runPython(t, cs, map[string]any{"servers": []string{"everything", "filesystem"}, "code": rawResultsCode})
		if isErr {
			t.Fatalf("the call failed:\n%s", text)
		}
		lines := strings.Split(text, "\n")
		if len(lines) != 4 {
			t.Fatalf("%d results, want 4:\n%s", len(lines), text)
		}
		results := make([]map[string]any, len(lines))
		for i, line := range lines {
			if err := json.Unmarshal([]byte(line), &results[i]); err != nil {
				t.Fatalf("result %d is not a dict: %v\n%s", i, err, line)
			}
			// The original's keys, in its order: model_dump(by_alias=True, exclude_none=True).
			var keys []string
			for _, k := range []string{"_meta", "content", "structuredContent", "isError"} {
				if strings.Contains(line, `"`+k+`": `) {
					keys = append(keys, k)
				}
			}
			if len(keys) != len(results[i]) || !slices.Contains(keys, "content") || !slices.Contains(keys, "isError") {
				t.Errorf("result %d: keys %v of %s; want content and isError, and only the original's keys", i, keys, line)
			}
			if len(keys) > 0 && keys[0] != "_meta" && !strings.HasPrefix(line, `{"content": `) {
				t.Errorf("result %d: %s; want the original's key order (content first)", i, line)
			}
		}
		text0 := func(r map[string]any) string {
			content, _ := r["content"].([]any)
			if len(content) == 0 {
				return ""
			}
			c, _ := content[0].(map[string]any)
			if c["type"] != "text" {
				return ""
			}
			s, _ := c["text"].(string)
			return s
		}
		if r := results[0]; r["isError"] != false || text0(r) != "Echo: hi" || r["structuredContent"] != nil {
			t.Errorf("echo: %v", r)
		}
		if r := results[1]; r["isError"] != false || text0(r) != "The sum of 2 and 3 is 5." {
			t.Errorf("get_sum: %v", r)
		}
		want := map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}
		if r := results[2]; r["isError"] != false || !reflect.DeepEqual(r["structuredContent"], want) || text0(r) == "" {
			t.Errorf("get-structured-content: %v; want structuredContent %v", r, want)
		}
		if r := results[3]; r["isError"] != true || !strings.Contains(text0(r), "Access denied") {
			t.Errorf("read_text_file outside the allowed directory: %v; want isError true and the server's message", r)
		}
	})
}
