package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An InputAPI is an API that fills InDir from Spec.Input between
// the creation of a container and its start (the Kubernetes backend).
type InputAPI interface {
	// FillInput runs Spec.Input of spec into the created container id's
	// InDir; it returns once the files are in place, or why they are not.
	FillInput(ctx context.Context, id string, spec engine.Spec) error
}

// fillInput fills the created container's InDir from spec.Input when the
// backend can, and records it on sb.
func (e *Engine) fillInput(ctx context.Context, sb *Sandbox, spec engine.Spec) error {
	f, ok := e.api.(InputAPI)
	if !ok || spec.Input == nil || spec.InBytes <= 0 {
		return nil
	}
	began := time.Now()
	if err := f.FillInput(ctx, sb.id, spec); err != nil {
		return fmt.Errorf("filling %s: %w", engine.InDir, err)
	}
	Trace(ctx, engine.PhaseInput, began)
	sb.inputFilled = true
	return nil
}

// InputFilled implements InputFiller.
func (s *Sandbox) InputFilled() bool { return s.inputFilled }

var _ engine.InputFiller = (*Sandbox)(nil)
