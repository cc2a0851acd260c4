package mcpbridge

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRPCBytesInFlightBounded: six concurrent RPCs of 12 MiB to a tool
// that asks for confirmation: the sandbox holds its share (two) while
// their questions wait, the others are refused at once with an error
// saying so, and the next call answers. On bb2658b all six were taken,
// decoded and waited, each question holding its arguments.
func TestRPCBytesInFlightBounded(t *testing.T) {
	var asked atomic.Int32
	cs, _ := policyBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"]}}}`, func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "timeout": 120, "code": `import asyncio
from mcp import runtime
big = "x" * (12 << 20)
async def one(i):
    try:
        await runtime.call_tool("stub", "get-sum", {"a": big, "b": i})
        return "ran"
    except MCPError as e:
        return "share" if "its share" in str(e) else "declined" if "declined" in str(e) else str(e)[:200]
print(sorted(await asyncio.gather(*(one(i) for i in range(6)))))`})
	if !strings.Contains(text, "'declined', 'declined'") || !strings.Contains(text, "'share'") || strings.Count(text, "'")/2 != 6 {
		t.Fatalf("six RPCs of 12 MiB: %q (asked %d)", text, asked.Load())
	}
	if _, text, _ := call(t, cs, map[string]any{"code": "print(6 * 7)"}); text != "42" {
		t.Fatalf("the next call: %q", text)
	}
}
