package entrypoint

import (
	"context"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// BenchmarkExecuteLocal measures a warm call of `pass` with the sandbox
// played by a local python3: the runtime and protocol cost without an
// engine's stream plumbing.
func BenchmarkExecuteLocal(b *testing.B) {
	s := New(enginetest.Local{}, nil)
	defer s.Close()
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res, err := s.Execute(ctx, "pass", 0); err != nil || res.Status != StatusSuccess {
			b.Fatal(res, err)
		}
	}
}
