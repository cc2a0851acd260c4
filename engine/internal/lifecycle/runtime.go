package lifecycle

import (
	"context"
	"fmt"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A RuntimeInspector is an API that can tell the OCI runtime of
// one of its containers.
type RuntimeInspector interface {
	// OCIRuntimeOf returns the OCI runtime of container id.
	OCIRuntimeOf(ctx context.Context, id string) (string, error)
}

// OCIRuntime implements OCIRuntimeReporter.
func (s *Sandbox) OCIRuntime(ctx context.Context) (string, error) {
	if s.closed.Load() {
		return "", fmt.Errorf("inspecting container %s: %w", ShortID(s.id), engine.ErrClosed)
	}
	ri, ok := s.e.api.(RuntimeInspector)
	if !ok {
		return "", fmt.Errorf("inspecting container %s: %s does not report OCI runtimes", ShortID(s.id), s.e.name)
	}
	rt, err := ri.OCIRuntimeOf(ctx, s.id)
	if err != nil {
		return "", fmt.Errorf("inspecting container %s: %w", ShortID(s.id), err)
	}
	return rt, nil
}

var _ engine.OCIRuntimeReporter = (*Sandbox)(nil)
