package mcpbridge

import (
	"strings"
	"testing"

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
