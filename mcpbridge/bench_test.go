package mcpbridge

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// BenchmarkRunPythonInMemory is a warm run_python call through go-sdk's
// in-memory transports with the sandbox played by a local python3: the
// bridge's own cost per call, over entrypoint's BenchmarkExecuteLocal.
func BenchmarkRunPythonInMemory(b *testing.B) {
	reg := discovery.NewRegistry(discovery.Options{Home: b.TempDir(), Cwd: b.TempDir()})
	br := New(enginetest.Local{}, &Options{Registry: reg})
	defer br.Close()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := br.Server().Connect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
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
