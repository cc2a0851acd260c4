package engine

import (
	"context"
	"fmt"
	"time"
)

// PhaseInput is the phase of a start in which an engine fills InDir from
// Spec.Input (Kubernetes: the input container's run).
const PhaseInput = "input"

// An InputFiller is a Sandbox whose engine may have filled InDir from
// Spec.Input as it started, before the sandbox's process ran.
type InputFiller interface {
	// InputFilled reports whether InDir was filled from Spec.Input.
	InputFilled() bool
}

// InputFilled reports whether sb's engine filled InDir from Spec.Input
// as sb started; when not, the caller copies the input in (Files.CopyIn).
func InputFilled(sb Sandbox) bool {
	f, ok := sb.(InputFiller)
	return ok && f.InputFilled()
}

// An inputAPI is a containerAPI that fills InDir from Spec.Input between
// the creation of a container and its start (the Kubernetes backend).
type inputAPI interface {
	// fillInput runs Spec.Input of spec into the created container id's
	// InDir; it returns once the files are in place, or why they are not.
	fillInput(ctx context.Context, id string, spec Spec) error
}

// fillInput fills the created container's InDir from spec.Input when the
// backend can, and records it on sb.
func (e *containerEngine) fillInput(ctx context.Context, sb *containerSandbox, spec Spec) error {
	f, ok := e.api.(inputAPI)
	if !ok || spec.Input == nil || spec.InBytes <= 0 {
		return nil
	}
	began := time.Now()
	if err := f.fillInput(ctx, sb.id, spec); err != nil {
		return fmt.Errorf("filling %s: %w", InDir, err)
	}
	tracePhase(ctx, PhaseInput, began)
	sb.inputFilled = true
	return nil
}

// InputFilled implements InputFiller.
func (s *containerSandbox) InputFilled() bool { return s.inputFilled }

// InputFilled implements InputFiller.
func (p *placedSandbox) InputFilled() bool { return InputFilled(p.Sandbox) }

var (
	_ InputFiller = (*containerSandbox)(nil)
	_ InputFiller = (*placedSandbox)(nil)
)
