package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// A backend is a connected engine.
type backend interface {
	Engine
	Name() string
	Close() error
}

// RuntimeOptions configure NewRuntime. The zero value auto-detects.
type RuntimeOptions struct {
	// Runtime is "docker", "podman", or "" to try podman, then docker.
	Runtime string
	// Logger receives connection, pull and clean-up reports. Zero:
	// discarded.
	Logger *slog.Logger
	// StopGrace is the grace period between SIGTERM and SIGKILL. Zero:
	// DefaultStopGrace.
	StopGrace time.Duration
}

// A Runtime is an Engine that picks and connects its backend lazily, on
// first use, so a program starts instantly. When no engine is reachable,
// Start returns one error (wrapping ErrNoEngine) naming what was tried and
// how to fix it; the next Start tries again.
type Runtime struct {
	opts RuntimeOptions
	log  *slog.Logger

	// connect functions, replaceable in tests.
	docker func(context.Context) (backend, error)
	podman func(context.Context) (backend, error)

	mu     sync.Mutex
	b      backend
	closed bool
}

// NewRuntime returns a Runtime; it connects nothing yet.
func NewRuntime(opts *RuntimeOptions) *Runtime {
	r := &Runtime{}
	if opts != nil {
		r.opts = *opts
	}
	r.log = loggerOrDiscard(r.opts.Logger)
	r.docker = func(ctx context.Context) (backend, error) {
		return NewDocker(ctx, &DockerOptions{Logger: r.log, StopGrace: r.opts.StopGrace})
	}
	r.podman = func(ctx context.Context) (backend, error) {
		p, err := NewPodman(ctx, &PodmanOptions{Logger: r.log, StopGrace: r.opts.StopGrace})
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return r
}

// Start implements Engine.
func (r *Runtime) Start(ctx context.Context, spec Spec) (Sandbox, error) {
	b, err := r.Backend(ctx)
	if err != nil {
		return nil, err
	}
	return b.Start(ctx, spec)
}

// Backend returns the connected backend, connecting it on first use.
func (r *Runtime) Backend(ctx context.Context) (interface {
	Engine
	Name() string
}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("runtime: %w", ErrClosed)
	}
	if r.b != nil {
		return r.b, nil
	}
	began := time.Now()
	b, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	tracePhase(ctx, PhaseConnect, began)
	r.b = b
	return b, nil
}

// connect tries the configured backend, or podman then docker.
func (r *Runtime) connect(ctx context.Context) (backend, error) {
	type attempt struct {
		name    string
		connect func(context.Context) (backend, error)
	}
	var order []attempt
	switch r.opts.Runtime {
	case RuntimeDocker:
		order = []attempt{{RuntimeDocker, r.docker}}
	case RuntimePodman:
		order = []attempt{{RuntimePodman, r.podman}}
	case "":
		order = []attempt{{RuntimePodman, r.podman}, {RuntimeDocker, r.docker}}
	default:
		return nil, fmt.Errorf("%s=%q: want \"docker\", \"podman\" or unset", EnvRuntime, r.opts.Runtime)
	}
	var why []string
	for _, a := range order {
		b, err := a.connect(ctx)
		if err == nil {
			r.log.Info("container engine selected", "engine", b.Name())
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		why = append(why, err.Error())
	}
	return nil, fmt.Errorf("%w; tried %s. Start Docker or Podman (scripts/provision starts both), "+
		"point DOCKER_HOST or CONTAINER_HOST at a running engine, or set %s to the engine you have",
		ErrNoEngine, strings.Join(why, "; "), EnvRuntime)
}

// Close closes the backend (stopping a Podman service the bridge started).
// Sandboxes must be closed first.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.b == nil {
		return nil
	}
	return r.b.Close()
}
