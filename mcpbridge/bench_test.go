package mcpbridge

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// BenchmarkRunPythonInMemory is a warm run_python call through go-sdk's
// in-memory transports with the sandbox played by a local python3: the
// bridge's own cost per call, over entrypoint's BenchmarkExecuteLocal.
func BenchmarkRunPythonInMemory(b *testing.B) {
	cs := newFixture(b, fixtureOptions{Engine: enginetest.Local{}}).connectInMemory(b)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}}
	if _, err := cs.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
