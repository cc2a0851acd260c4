package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A MemoryAPI is an API that reads its containers' memory.
type MemoryAPI interface {
	// MemoryUsage returns the memory of the running container id (a
	// full ID), as MemoryReader.SandboxMemory counts it.
	MemoryUsage(ctx context.Context, id string) (int64, error)
}

// doingMemory names SandboxMemory in its errors.
const doingMemory = "reading a sandbox's memory"

// SandboxMemory implements MemoryReader.SandboxMemory for a backend: the
// sandbox is checked as for SandboxFiles, then its memory read.
func (e *Engine) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	api, st, err := e.runningSandbox(ctx, engineName, ref, doingMemory)
	if err != nil {
		return 0, err
	}
	m, ok := e.api.(MemoryAPI)
	if !ok {
		return 0, fmt.Errorf("%s: the %s backend cannot", doingMemory, e.name)
	}
	n, err := m.MemoryUsage(ctx, st.ID)
	if err == nil {
		return n, nil
	}
	// The sandbox may have ended since it was inspected: say so rather
	// than how the engine's stats failed.
	if ctx.Err() == nil {
		if now, ierr := api.InspectSandbox(ctx, st.ID); errors.Is(ierr, engine.ErrNoSandbox) {
			return 0, fmt.Errorf("%s: %w", doingMemory, ierr)
		} else if ierr == nil && !now.Running {
			return 0, fmt.Errorf("%s: %w", doingMemory, &engine.ExitedError{Code: now.ExitCode})
		}
	}
	return 0, fmt.Errorf("%s: sandbox %s on %s: %w", doingMemory, ShortID(st.ID), e.name, err)
}

// MemoryLess returns usage less inactive, 0 when inactive is larger; an
// error when the difference does not fit an int64 (no memory is that
// large).
func MemoryLess(usage, inactive uint64) (int64, error) {
	if inactive >= usage {
		return 0, nil
	}
	n := usage - inactive
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("the engine reports an implausible memory usage of %d bytes", n)
	}
	return int64(n), nil
}
