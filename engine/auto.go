package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Backend names, as MCP_BRIDGE_RUNTIME spells them.
const (
	BackendDocker = "docker"
	BackendPodman = "podman"
)

// A backend is a connected engine.
type backend interface {
	Engine
	Name() string
	Close() error
}

// AutoOptions configure NewAuto. The zero value auto-detects.
type AutoOptions struct {
	// Backend is BackendDocker, BackendPodman, or "" to try Podman, then
	// Docker.
	Backend string
	// Address is the engine's address (DockerOptions.Host,
	// PodmanOptions.URI). Zero: each backend's default.
	Address string
	// CertPath is DockerOptions.CertPath. Zero: no TLS files.
	CertPath string
	// Context is the Docker context (DockerOptions.Context) or Podman
	// connection (PodmanOptions.Connection) to reach the engine through;
	// it may not be set with Address. Zero: each backend's default.
	Context string
	// Logger receives connection, pull and clean-up reports. Zero:
	// discarded.
	Logger *slog.Logger
	// StopGrace is the grace period between SIGTERM and SIGKILL. Zero:
	// two seconds.
	StopGrace time.Duration
	// Kubernetes configures the Kubernetes backend (BackendKubernetes):
	// its namespace and RuntimeClass; its kubeconfig context is Context.
	// Zero: KubernetesOptions' defaults.
	Kubernetes KubernetesOptions
}

// An Auto is an Engine that picks and connects its backend lazily, on
// first use, so a program starts instantly. When no engine is reachable,
// Start returns one error (wrapping ErrNoEngine) naming what was tried and
// how to fix it; the next Start tries again.
type Auto struct {
	opts AutoOptions
	log  *slog.Logger

	// connect functions, replaceable in tests.
	docker func(context.Context) (backend, error)
	podman func(context.Context) (backend, error)
	kube   func(context.Context) (backend, error)

	mu     sync.Mutex
	b      backend
	closed bool
}

// NewAuto returns an Auto; it connects nothing yet.
func NewAuto(opts *AutoOptions) *Auto {
	a := &Auto{}
	if opts != nil {
		a.opts = *opts
	}
	a.log = loggerOrDiscard(a.opts.Logger)
	a.docker = func(ctx context.Context) (backend, error) {
		return NewDocker(ctx, a.dockerOptions())
	}
	a.kube = func(ctx context.Context) (backend, error) {
		ko := a.opts.Kubernetes
		ko.Context, ko.Logger = a.opts.Context, a.log
		return NewKubernetes(ctx, &ko)
	}
	a.podman = func(ctx context.Context) (backend, error) {
		p, err := NewPodman(ctx, a.podmanOptions())
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return a
}

// dockerOptions are the options the Docker backend is connected with.
func (a *Auto) dockerOptions() *DockerOptions {
	return &DockerOptions{Host: a.opts.Address, Context: a.opts.Context, CertPath: a.opts.CertPath,
		Logger: a.log, StopGrace: a.opts.StopGrace}
}

// podmanOptions are the options the Podman backend is connected with.
func (a *Auto) podmanOptions() *PodmanOptions {
	return &PodmanOptions{URI: a.opts.Address, Connection: a.opts.Context, Logger: a.log, StopGrace: a.opts.StopGrace}
}

// Start implements Engine.
func (a *Auto) Start(ctx context.Context, spec Spec) (Sandbox, error) {
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
		return nil, fmt.Errorf("engine: %w", ErrClosed)
	}
	if a.b != nil {
		return a.b, nil
	}
	began := time.Now()
	b, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	tracePhase(ctx, PhaseConnect, began)
	a.b = b
	return b, nil
}

// connect tries the configured backend, or Podman then Docker.
func (a *Auto) connect(ctx context.Context) (backend, error) {
	type attempt struct {
		name    string
		connect func(context.Context) (backend, error)
	}
	var order []attempt
	switch a.opts.Backend {
	case BackendDocker:
		order = []attempt{{BackendDocker, a.docker}}
	case BackendPodman:
		order = []attempt{{BackendPodman, a.podman}}
	case BackendKubernetes:
		order = []attempt{{BackendKubernetes, a.kube}}
	case "":
		order = []attempt{{BackendPodman, a.podman}, {BackendDocker, a.docker}}
	default:
		return nil, fmt.Errorf("engine backend %q: want %q, %q, %q or none (auto-detect)", a.opts.Backend, BackendDocker, BackendPodman, BackendKubernetes)
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
	if a.opts.Backend == BackendKubernetes {
		hint = "Check KUBECONFIG (or the pod's service account in a cluster) and its context, the namespace " +
			"MCP_BRIDGE_K8S_NAMESPACE and what RBAC lets the bridge's identity do there " +
			"(scripts/provision --kubernetes brings up a single-node cluster and prints its settings)"
	}
	if tlsFailure(tried) {
		hint = "The engine's TLS is refused or misconfigured: DOCKER_CERT_PATH (or certs= in MCP_BRIDGE_ENGINES) " +
			"must hold ca.pem, the CA that signed the daemon's certificate, and cert.pem and key.pem, " +
			"a client certificate the daemon's CA signed; DOCKER_TLS_VERIFY=1 for a daemon started with --tlsverify"
	}
	return nil, fmt.Errorf("%w; tried %s%s", ErrNoEngine, endSentence(tried), hint)
}

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

// Resume implements Resumer, on a backend that can.
func (a *Auto) Resume(ctx context.Context, engineName, ref string, cmd []string) (Sandbox, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	r, ok := b.(Resumer)
	if !ok {
		return nil, fmt.Errorf("resuming a sandbox: the %s backend cannot", b.Name())
	}
	return r.Resume(ctx, engineName, ref, cmd)
}

// RemoveSandbox implements Resumer, on a backend that can.
func (a *Auto) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	b, err := a.backend(ctx)
	if err != nil {
		return err
	}
	r, ok := b.(Resumer)
	if !ok {
		return fmt.Errorf("removing a sandbox: the %s backend cannot", b.Name())
	}
	return r.RemoveSandbox(ctx, engineName, ref)
}

// SweepExited implements Sweeper, on a backend that can.
func (a *Auto) SweepExited(ctx context.Context, keyID string) (int, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return 0, err
	}
	s, ok := b.(Sweeper)
	if !ok {
		return 0, nil
	}
	return s.SweepExited(ctx, keyID)
}
