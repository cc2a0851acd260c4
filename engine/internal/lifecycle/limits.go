package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// limitsTimeout bounds one question of the engine about its limits.
const limitsTimeout = 30 * time.Second

// ProbeLimits starts asking the engine whether it applies limits, so that
// the first Start finds the answer: asking Podman takes a few hundred
// milliseconds.
func (e *Engine) ProbeLimits() { e.probeLimits() }

// probeLimits starts asking the engine whether it applies limits, unless
// it was answered or is being asked, and returns that question; nil when
// the API cannot tell. A question that failed is asked again. Start asks
// before it creates the container and waits for the answer before it
// starts it.
func (e *Engine) probeLimits() *limitsRun {
	p, ok := e.api.(LimitsProber)
	if !ok {
		return nil
	}
	e.limits.mu.Lock()
	defer e.limits.mu.Unlock()
	if r := e.limits.run; r != nil {
		select {
		case <-r.done:
			if r.err == nil {
				return r
			}
		default:
			return r
		}
	}
	r := &limitsRun{done: make(chan struct{})}
	e.limits.run = r
	base := e.pulls.base()
	e.pulls.wg.Add(1)
	go func() {
		defer e.pulls.wg.Done()
		ctx, cancel := context.WithTimeout(base, limitsTimeout)
		defer cancel()
		r.why, r.err = p.WeakLimits(ctx)
		close(r.done)
	}()
	return r
}

// checkLimits refuses a start on an engine that cannot apply the
// sandbox's limits (the answer to r), unless the operator allowed it:
// then it logs a warning once.
func (e *Engine) checkLimits(ctx context.Context, r *limitsRun) error {
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return fmt.Errorf("checking that the engine applies the sandbox's limits: %w", ctx.Err())
	}
	switch {
	case r.err != nil:
		return fmt.Errorf("checking that the engine applies the sandbox's limits: %w", r.err)
	case r.why == "":
		return nil
	case !e.AllowWeakLimits:
		return fmt.Errorf("%w: %s at %s: %s. A sandbox would run without them: use a rootful engine, or cgroup v2 with the memory, pids and cpu controllers delegated to the user; or set MCP_BRIDGE_ALLOW_WEAK_LIMITS=1 to run sandboxes without them",
			engine.ErrWeakLimits, e.name, e.Addr, r.why)
	}
	e.limits.mu.Lock()
	warn := !e.limits.warned
	e.limits.warned = true
	e.limits.mu.Unlock()
	if warn {
		e.Log.Warn("sandboxes run without memory, pids and CPU limits (MCP_BRIDGE_ALLOW_WEAK_LIMITS=1)", "engine", e.name, "why", r.why)
	}
	return nil
}
