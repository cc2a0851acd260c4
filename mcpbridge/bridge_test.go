package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// write writes content to path, making its directory.
func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func call(t *testing.T, cs *mcp.ClientSession, args any) (*mcp.CallToolResult, string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var sc map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &sc)
	return res, text, sc
}

func TestRunPythonStatePersists(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{})
	res, text, sc := call(t, cs, map[string]any{"code": "x = 20\nprint('set')"})
	if res.IsError || text != "set" || sc["summary"] != nil || sc["status"] != nil {
		t.Fatalf("first call: %v %q %v", res.IsError, text, sc)
	}
	res, text, sc = call(t, cs, map[string]any{"code": "print(x * 2)\nprint('two')", "timeout": 10})
	if res.IsError || text != "40\ntwo" {
		t.Fatalf("second call: %q", text)
	}
	if got := sc["stdout"]; len(got.([]any)) != 2 {
		t.Fatalf("structured stdout %v", got)
	}
	_, text, sc = call(t, cs, map[string]any{"code": "y = 1"})
	if text != "Success (no output)" || sc["summary"] != "Success (no output)" {
		t.Fatalf("no output: %q %v", text, sc)
	}
}

// TestRunPythonFailureKeepsState fails a call with an exception, then
// with a timeout: each is reported as such, and the session keeps its
// state.
func TestRunPythonFailureKeepsState(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		args     map[string]any
		reported func(text string, sc map[string]any) bool
	}{
		{"exception", map[string]any{"code": "print('partial')\nraise KeyError('k')"}, func(text string, sc map[string]any) bool {
			return sc["status"] == "error" && sc["exitCode"] == float64(1) &&
				strings.Contains(text, "partial\nstderr:\nTraceback") && strings.Contains(text, "status: error") &&
				strings.Contains(fmt.Sprint(sc["error"]), "KeyError")
		}},
		{"timeout", map[string]any{"code": "while True: pass", "timeout": 1}, func(text string, sc map[string]any) bool {
			return sc["status"] == "timeout" && sc["timeoutSeconds"] == float64(1) && strings.Contains(text, "status: timeout")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs, _ := connectClient(t, Options{})
			call(t, cs, map[string]any{"code": "kept = 'me'"})
			res, text, sc := call(t, cs, tt.args)
			if !res.IsError || !tt.reported(text, sc) {
				t.Fatalf("%s: %q %v", tt.name, text, sc)
			}
			if _, text, _ = call(t, cs, map[string]any{"code": "print(kept)"}); text != "me" {
				t.Fatalf("after the %s: %q", tt.name, text)
			}
		})
	}
}

func TestRunPythonValidation(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{})
	tests := []struct {
		args any
		want string
	}{
		{map[string]any{}, "Missing 'code' argument"},
		{map[string]any{"code": "   "}, "Missing 'code' argument"},
		{map[string]any{"code": 5}, "'code' must be a string"},
		{map[string]any{"code": "pass", "servers": "fs"}, "'servers' must be a list"},
		{map[string]any{"code": "pass", "servers": []any{1}}, "'servers' must be a list of strings"},
		{map[string]any{"code": "pass", "servers": []any{"nope"}}, `Unknown MCP server: "nope" is not configured`},
		{map[string]any{"code": "pass", "timeout": "10"}, "'timeout' must be an integer"},
		{map[string]any{"code": "pass", "timeout": 2.5}, "'timeout' must be an integer"},
	}
	for _, tt := range tests {
		res, text, sc := call(t, cs, tt.args)
		if !res.IsError || sc["status"] != "validation_error" || sc["error"] != tt.want || !strings.Contains(text, tt.want) {
			t.Errorf("%v: %q %v; want validation_error %q", tt.args, text, sc, tt.want)
		}
	}
}

func TestToolsListIsSmallAndNamesNoServer(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "run_python" {
		t.Fatalf("tools: %+v", res.Tools)
	}
	// The tools, not the result's envelope (its protocol's fields): a
	// token is about 4 characters of English; 300 tokens is the budget.
	raw, _ := json.Marshal(res.Tools)
	if len(raw) > 1200 {
		t.Fatalf("tools/list is %d bytes, over the ~300-token budget:\n%s", len(raw), raw)
	}
}

func TestTOONMode(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{OutputMode: OutputTOON})
	_, text, sc := call(t, cs, map[string]any{"code": "print('hi')"})
	if text != "```toon\nstatus: success\nsummary: Success\nexitCode: 0\nstdout[1]: hi\n```" || sc["status"] != "success" || sc["stdout"] == nil {
		t.Fatalf("toon: %q, structured %v", text, sc)
	}
}
