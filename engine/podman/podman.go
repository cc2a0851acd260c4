//go:build remote

package podman

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/errorhandling"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// Compiled reports whether this binary has the Podman backend: it has
// (built with PodmanBuildTags).
const Compiled = true

// A Podman is an Engine on Podman's REST API through its Go bindings.
type Podman struct {
	// ep is the service's address and what chose it, with the identity
	// each sandbox's own connection to it authenticates with.
	ep   podmanEndpoint
	conn context.Context // carries the bindings connection
	svc  *podmanService  // the service we started, if any
	e    *lifecycle.Engine
}

// New connects to a Podman service, found as the podman remote
// client finds it, named connections included (see Options.URI for
// the order tried), starting one when nothing names a service, none
// listens and the podman binary is installed; it logs which it chose and
// why, and removes containers left behind by dead bridge processes.
func New(ctx context.Context, opts *Options) (*Podman, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := lifecycle.LoggerOrDiscard(opts.Logger)
	routeBindingsLogs(log)
	var conn context.Context
	try := func(ep podmanEndpoint) error {
		if !unixSocketAnswers(ep.URI) {
			return errors.New("no service listening")
		}
		c, err := podmanConnect(ctx, ep)
		conn = c
		return err
	}
	ep, tried, mayStart, err := findPodman(opts, os.Getenv, podmanSocketCandidates(os.Getenv, os.Geteuid()), log, try)
	if err != nil {
		return nil, err
	}
	if ep != nil {
		return newPodman(ctx, conn, *ep, nil, opts, log), nil
	}
	if mayStart && !opts.NoService {
		svc, err := startPodmanService(ctx, log)
		if err != nil {
			tried = append(tried, err.Error())
		} else {
			ep := podmanEndpoint{URI: svc.URI, Source: podmanSourceService}
			conn, err := podmanConnect(ctx, ep)
			if err == nil {
				return newPodman(ctx, conn, ep, svc, opts, log), nil
			}
			svc.Close()
			tried = append(tried, svc.URI+": "+err.Error())
		}
	}
	return nil, fmt.Errorf("podman: %s", strings.Join(tried, "; "))
}

func newPodman(ctx context.Context, conn context.Context, ep podmanEndpoint, svc *podmanService, opts *Options, log *slog.Logger) *Podman {
	p := &Podman{ep: ep, conn: conn, svc: svc}
	p.e = lifecycle.NewEngine(engine.BackendPodman, ep.URI, p, log, opts.StopGrace)
	p.e.AllowWeakLimits = opts.AllowWeakLimits
	p.e.ProbeLimits()
	// The API version the ping reported: system.Version would cost 0.4 s
	// here (the service gathers the versions of conmon, runtimes, …).
	args := []any{"uri", ep.URI}
	if ep.Connection != "" {
		args = append(args, "connection", ep.Connection)
	}
	log.Info("connected to podman", append(args, "api", bindings.ServiceVersion(conn).String())...)
	p.e.RemoveOrphans(ctx)
	return p
}

// podmanConnect opens a bindings connection to ep, with its identity
// and machine mode (none: as the bindings do, CONTAINER_SSHKEY, ssh_config
// and the ssh agent for an ssh:// address), and pings it.
func podmanConnect(ctx context.Context, ep podmanEndpoint) (context.Context, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := bindings.NewConnectionWithIdentity(pctx, ep.URI, ep.Identity, ep.Machine)
	if err != nil {
		return nil, err
	}
	// Keep only the connection value: the ping's deadline must not bound
	// later calls.
	return context.WithoutCancel(conn), nil
}

// Name returns "podman".
func (p *Podman) Name() string { return engine.BackendPodman }

// Close tries once more to remove the containers whose removal failed and
// stops the service the bridge started, if any.
func (p *Podman) Close() error {
	p.e.Close()
	if p.svc != nil {
		return p.svc.Close()
	}
	return nil
}

// ctx returns a context with ctx's deadline and cancellation and the
// bindings connection's values.
func (p *Podman) ctx(ctx context.Context) context.Context { return mergeValues(ctx, p.conn) }

// Start implements Engine.
func (p *Podman) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	return p.e.Start(ctx, spec)
}

// ConnFailed implements lifecycle.API.
func (p *Podman) ConnFailed(err error) bool { return lifecycle.DialFailed(err) }

// Create implements lifecycle.API.
func (p *Podman) Create(ctx context.Context, spec engine.Spec, o lifecycle.Owner, name string) (string, error) {
	g := podmanSpec(spec, o)
	g.Name = name
	created, err := containers.CreateWithSpec(p.ctx(ctx), g, nil)
	if err != nil {
		return "", err
	}
	return created.ID, nil
}

// Verify implements lifecycle.API.
func (p *Podman) Verify(ctx context.Context, id string, spec engine.Spec) error {
	if spec.OCIRuntime == "" {
		return nil
	}
	began := time.Now()
	if err := p.checkOCIRuntime(ctx, id, spec.OCIRuntime); err != nil {
		return err
	}
	lifecycle.Trace(ctx, engine.PhaseCheck, began)
	return nil
}

// checkOCIRuntime verifies that the container got the OCI runtime asked
// for: a service may ignore the request, and a sandbox silently run under
// a weaker runtime than configured is worse than none.
func (p *Podman) checkOCIRuntime(ctx context.Context, id, want string) error {
	info, err := containers.Inspect(p.ctx(ctx), id, nil)
	if err != nil {
		return fmt.Errorf("inspecting container %s: %w", lifecycle.ShortID(id), err)
	}
	if got := filepath.Base(info.OCIRuntime); got != want {
		return fmt.Errorf("%s=%q: the podman service created the container with runtime %q instead; "+
			"set the runtime in the service's containers.conf ([engine] runtime) or use docker", "MCP_BRIDGE_OCI_RUNTIME", want, got)
	}
	return nil
}

// EnsureImage implements engine.ImageEnsurer.
func (p *Podman) EnsureImage(ctx context.Context, ref string) error {
	return p.e.EnsureImage(ctx, ref)
}

// HasImage implements lifecycle.API and engine.Describer.
func (p *Podman) HasImage(ctx context.Context, ref string) (bool, error) {
	return images.Exists(p.ctx(ctx), ref, nil)
}

// PullImage implements lifecycle.API and engine.Describer: it pulls
// the image ref, as Start does when it is missing.
func (p *Podman) PullImage(ctx context.Context, ref string) error {
	w := &engine.LineLogger{Log: p.e.Log, Level: slog.LevelInfo, Msg: "pull progress", Attrs: []any{"image", ref}}
	defer w.Flush()
	var out io.Writer = w
	if watch := engine.PullWatcherOf(ctx); watch != nil {
		out = io.MultiWriter(w, &pullLines{tally: engine.NewLayerTally(ref), watch: watch})
	}
	_, err := images.Pull(p.ctx(ctx), ref, new(images.PullOptions).WithQuiet(false).WithProgressWriter(out))
	return err
}

// List returns the containers of every bridge process on this engine.
func (p *Podman) List(ctx context.Context) ([]engine.SandboxInfo, error) {
	list, err := containers.List(p.ctx(ctx), new(containers.ListOptions).WithAll(true).
		WithFilters(map[string][]string{"label": {engine.LabelBridge + "=1"}}))
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := make([]engine.SandboxInfo, 0, len(list))
	for _, c := range list {
		out = append(out, engine.SandboxInfo{ID: c.ID, Labels: c.Labels, State: c.State})
	}
	return out, nil
}

// Stop implements lifecycle.API.
func (p *Podman) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := uint(grace.Seconds() + 0.999)
	err := containers.Stop(p.ctx(ctx), id, new(containers.StopOptions).WithTimeout(secs))
	if podmanNotFound(err) {
		return nil
	}
	return err
}

// Remove implements lifecycle.API.
func (p *Podman) Remove(ctx context.Context, id string) error {
	_, err := containers.Remove(p.ctx(ctx), id, new(containers.RemoveOptions).WithForce(true).WithVolumes(true))
	if podmanNotFound(err) {
		return nil
	}
	return err
}

// podmanNotFound reports whether err is the service's "no such container".
func podmanNotFound(err error) bool {
	var em *errorhandling.ErrorModel
	return errors.As(err, &em) && em.Code() == http.StatusNotFound
}

// Ping implements Pinger: it asks the service's /_ping endpoint.
func (p *Podman) Ping(ctx context.Context) error {
	ctx = p.ctx(ctx)
	conn, err := bindings.GetClient(ctx)
	if err != nil {
		return fmt.Errorf("podman: %w", err)
	}
	resp, err := conn.DoRequest(ctx, nil, http.MethodGet, "/_ping", nil, nil)
	if err != nil {
		return fmt.Errorf("podman: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("podman: ping answered %s", resp.Status)
	}
	return nil
}
