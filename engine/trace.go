package engine

import (
	"context"
	"time"
)

// Phase names reported to a StartTrace by the engine backends.
const (
	PhaseConnect = "connect" // the engine is connected (the first start of auto.Auto only)
	PhaseImage   = "image"   // the image is looked up (and pulled when missing)
	PhaseCreate  = "create"  // the container is created
	PhaseCheck   = "check"   // the created container is inspected (Podman, when an OCI runtime is asked for)
	PhaseAttach  = "attach"  // the streams are attached
	PhaseStart   = "start"   // the container is started
	PhaseWatch   = "watch"   // an OOM watch is set up (Podman on a local cgroup v1 host)
)

// A StartTrace is a set of hooks run while a sandbox starts, as
// net/http/httptrace's ClientTrace is for a request: it tells where the
// time of a new session goes. Install it with WithStartTrace on the
// context given to Engine.Start; other layers (the handshake with the
// program in the sandbox) report their phases through TracePhase on the
// same context.
type StartTrace struct {
	// Phase, when not nil, is called as each phase ends, with its name and
	// duration, on the goroutine that ran the phase.
	Phase func(name string, took time.Duration)
}

type traceKey struct{}

// WithStartTrace returns a context carrying t.
func WithStartTrace(ctx context.Context, t *StartTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// TracePhase reports a finished phase to the StartTrace of ctx, if any.
func TracePhase(ctx context.Context, name string, took time.Duration) {
	if t, _ := ctx.Value(traceKey{}).(*StartTrace); t != nil && t.Phase != nil {
		t.Phase(name, took)
	}
}
