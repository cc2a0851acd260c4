// Package auto assembles the backends into the engine a bridge uses: an
// Auto connects one backend (Docker, Podman or Kubernetes) on first use,
// detecting which when none is named; a Multi places sandboxes on several
// engines, the least loaded first, and routes what acts on one sandbox to
// the engine it runs on (engine.Router).
package auto

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/docker"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/kube"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/podman"
)

// A backend is a connected engine.
type backend interface {
	engine.Engine
	Name() string
	Close() error
}

// An Auto is an Engine that picks and connects its backend lazily, on
// first use, so a program starts instantly. It stands for its backend
// (engine.Wrapper): the backend's optional capabilities are reached
// through engine.As. When no engine is reachable,
// Start returns one error (wrapping ErrNoEngine) naming what was tried and
// how to fix it; the next Start tries again.
type Auto struct {
	opts engine.AutoOptions
	log  *slog.Logger

	// connect functions, replaceable in tests; podman starts a service
	// of its own when none answers only if mayStart.
	docker func(context.Context) (backend, error)
	podman func(ctx context.Context, mayStart bool) (backend, error)
	kube   func(context.Context) (backend, error)

	mu     sync.Mutex
	b      backend
	closed bool
}

// New returns an Auto; it connects nothing yet.
func New(opts *engine.AutoOptions) *Auto {
	a := &Auto{}
	if opts != nil {
		a.opts = *opts
	}
	a.log = lifecycle.LoggerOrDiscard(a.opts.Logger)
	a.docker = func(ctx context.Context) (backend, error) {
		return docker.New(ctx, a.dockerOptions())
	}
	a.kube = func(ctx context.Context) (backend, error) {
		ko := a.opts.Kubernetes
		ko.Context, ko.Logger = a.opts.Context, a.log
		return kube.New(ctx, &ko)
	}
	a.podman = func(ctx context.Context, mayStart bool) (backend, error) {
		o := a.podmanOptions()
		o.NoService = !mayStart
		p, err := podman.New(ctx, o)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return a
}

// dockerOptions are the options the Docker backend is connected with.
func (a *Auto) dockerOptions() *docker.Options {
	return &docker.Options{Host: a.opts.Address, Context: a.opts.Context, CertPath: a.opts.CertPath,
		Logger: a.log, StopGrace: a.opts.StopGrace, AllowWeakLimits: a.opts.AllowWeakLimits}
}

// podmanOptions are the options the Podman backend is connected with.
func (a *Auto) podmanOptions() *podman.Options {
	return &podman.Options{URI: a.opts.Address, Connection: a.opts.Context, Logger: a.log, StopGrace: a.opts.StopGrace,
		AllowWeakLimits: a.opts.AllowWeakLimits}
}

// Start implements Engine.
func (a *Auto) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	return b.Start(ctx, spec)
}

// backend returns the connected backend, connecting it on first use.
func (a *Auto) backend(ctx context.Context) (backend, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, fmt.Errorf("engine: %w", engine.ErrClosed)
	}
	if a.b != nil {
		return a.b, nil
	}
	began := time.Now()
	b, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	lifecycle.Trace(ctx, engine.PhaseConnect, began)
	a.b = b
	return b, nil
}

// connect tries the configured backend; or, detecting, a Podman service
// that answers, then Docker, then a Podman service started for the
// bridge (a user in the docker group on a host where rootless Podman
// would apply no limits gets Docker).
func (a *Auto) connect(ctx context.Context) (backend, error) {
	type attempt struct {
		name    string
		connect func(context.Context) (backend, error)
	}
	var order []attempt
	switch a.opts.Backend {
	case engine.BackendDocker:
		order = []attempt{{engine.BackendDocker, a.docker}}
	case engine.BackendPodman:
		order = []attempt{{engine.BackendPodman, a.podmanMayStart}}
	case engine.BackendKubernetes:
		order = []attempt{{engine.BackendKubernetes, a.kube}}
	case "":
		order = []attempt{{engine.BackendPodman, a.podmanRunning}, {engine.BackendDocker, a.docker}, {engine.BackendPodman, a.podmanMayStart}}
	default:
		return nil, fmt.Errorf("engine backend %q: want %q, %q, %q or none (auto-detect)", a.opts.Backend, engine.BackendDocker, engine.BackendPodman, engine.BackendKubernetes)
	}
	var why []string
	for _, at := range order {
		b, err := at.connect(ctx)
		if err == nil {
			a.log.Info("container engine selected", "engine", b.Name())
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		why = append(why, err.Error())
	}
	tried := strings.Join(why, "; ")
	hint := "Start Docker or Podman (scripts/provision starts both), point DOCKER_HOST or CONTAINER_HOST " +
		"at a running engine (or choose a Docker context, DOCKER_CONTEXT or `docker context use`, or a Podman connection, CONTAINER_CONNECTION), " +
		"or set MCP_BRIDGE_RUNTIME to the engine you have"
	if a.opts.Backend == engine.BackendKubernetes {
		hint = "Check KUBECONFIG (or the pod's service account in a cluster) and its context, the namespace " +
			"MCP_BRIDGE_K8S_NAMESPACE and what RBAC lets the bridge's identity do there " +
			"(scripts/provision --kubernetes brings up a single-node cluster and prints its settings)"
	}
	if tlsFailure(tried) {
		hint = "The engine's TLS is refused or misconfigured: DOCKER_CERT_PATH (or certs= in MCP_BRIDGE_ENGINES) " +
			"must hold ca.pem, the CA that signed the daemon's certificate, and cert.pem and key.pem, " +
			"a client certificate the daemon's CA signed; DOCKER_TLS_VERIFY=1 for a daemon started with --tlsverify"
	}
	return nil, fmt.Errorf("%w; tried %s%s", engine.ErrNoEngine, endSentence(tried), hint)
}

// podmanRunning connects a Podman service that answers.
func (a *Auto) podmanRunning(ctx context.Context) (backend, error) { return a.podman(ctx, false) }

// podmanMayStart connects a Podman service, starting one when none
// answers.
func (a *Auto) podmanMayStart(ctx context.Context) (backend, error) { return a.podman(ctx, true) }

// tlsFailure reports whether a connection error is about TLS: a refused
// or unverified certificate, unreadable TLS files, or plain HTTP sent to
// a TLS port.
func tlsFailure(msg string) bool {
	for _, s := range []string{"tls:", "x509:", "certificate", "PEM", "X509 key pair", "HTTPS server"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// endSentence returns s ended as a sentence, with the space before the
// next: "running?" stays, "running" and "running." become "running.".
func endSentence(s string) string {
	s = strings.TrimRight(s, " .")
	if strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!") {
		return s + " "
	}
	return s + ". "
}

// Unwrap implements engine.Wrapper: it returns the backend, connecting
// it when none is connected yet (as the first Start would). The
// backend's optional capabilities are found through it (engine.As).
func (a *Auto) Unwrap(ctx context.Context) (engine.Engine, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Close closes the backend (stopping a Podman service the bridge started).
// Sandboxes must be closed first.
func (a *Auto) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.b == nil {
		return nil
	}
	return a.b.Close()
}

// Ping implements Pinger: it connects the backend when none is connected
// yet (as the first Start would), then pings it.
func (a *Auto) Ping(ctx context.Context) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	if p, ok := b.(engine.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// Name returns the name of the connected backend, or "auto" before one is
// connected.
func (a *Auto) Name() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.b == nil {
		return "auto"
	}
	return a.b.Name()
}

var (
	_ engine.Wrapper = (*Auto)(nil)
	_ engine.Pinger  = (*Auto)(nil)
)
