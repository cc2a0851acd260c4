package mcpbridge

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestForkProblem: a fork is refused before the code runs where
// sandboxes do not fork, past MCP_BRIDGE_MAX_FORKS, and past the
// client's handles.
func TestForkProblem(t *testing.T) {
	hs := &handles{table: newHandleTable(), opts: HandleOptions{MaxPerClient: 3}}
	req := &mcp.CallToolRequest{}
	for _, tt := range []struct {
		max, n int
		want   string
	}{
		{0, 1, "MCP_BRIDGE_SNAPSHOTS=1"},
		{2, 3, "at most 2 (MCP_BRIDGE_MAX_FORKS)"},
		{4, 4, "more than MCP_BRIDGE_MAX_HANDLES allows (3)"},
		{4, 3, ""},
	} {
		f := &forker{max: tt.max, hs: hs}
		got := f.problem(req, tt.n)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("max %d, fork %d: %q, want %q", tt.max, tt.n, got, tt.want)
		}
	}
	if got := maxForks(&Options{MaxForks: 3}); got != 0 {
		t.Errorf("without snapshots maxForks = %d", got)
	}
}

// TestRunPythonToolFork: run_python takes fork only where sandboxes fork;
// its schema is otherwise as it was.
func TestRunPythonToolFork(t *testing.T) {
	props := func(forks int) map[string]any {
		return runPythonTool(time.Second, time.Minute, forks).InputSchema.(map[string]any)["properties"].(map[string]any)
	}
	off, on := props(0), props(4)
	if off["fork"] != nil || off["timeout"].(map[string]any)["minimum"] != 1 {
		t.Errorf("without forks: %v", off)
	}
	if on["fork"].(map[string]any)["type"] != "integer" || on["session"] == nil || on["code"] == nil {
		t.Errorf("with forks: %v", on)
	}
}
