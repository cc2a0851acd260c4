// Package lifecycle is the container skeleton the backends of package
// engine share: the sequence of a sandbox's start (image, create, check,
// input, attach, start), its wait and close, the sandboxes resumed by a
// command run in them, their files through the engine's archive API, and
// the clean-up of containers left behind. A backend supplies the calls
// on its engine (API) and on one container (Ops).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// defaultStopGrace is the grace period between SIGTERM and SIGKILL when
// the options leave it zero.
const defaultStopGrace = 2 * time.Second

// An Engine is what the backends share (Docker, Podman and Kubernetes):
// the sequence of Start, the images known present, and the clean-up of
// containers (the leftovers of failed removals, the orphans of dead bridge
// processes). What differs between the backends is behind api.
type Engine struct {
	name string // engine.BackendDocker, …
	// Addr is the engine's address, for messages.
	Addr string
	api  API
	// Log receives the backend's reports.
	Log *slog.Logger
	// Owner is the owner of the containers the engine creates.
	Owner Owner
	// PodAlive reports whether a bridge pod that owns containers still
	// exists (the Kubernetes backend's); nil: no pod is ever gone.
	PodAlive func(context.Context, engine.PodRef) bool
	grace    time.Duration
	images   sync.Map // image reference → struct{}, once known present
	// left holds the containers whose removal failed, tried again at
	// every Start and at Close.
	left leftovers
}

// An API is one backend's calls on its engine, as a
// Engine makes them. Calls on a container that is already gone
// (stop, remove) report no error.
type API interface {
	// ConnFailed reports whether err is a failure to reach the engine
	// at all, as opposed to an answer from it.
	ConnFailed(err error) bool
	// HasImage reports whether the image ref is present.
	HasImage(ctx context.Context, ref string) (bool, error)
	// PullImage pulls the image ref, logging its progress.
	PullImage(ctx context.Context, ref string) error
	// Create creates the container of spec (with its defaults applied),
	// owned by o and called name, and returns its ID.
	Create(ctx context.Context, spec engine.Spec, o Owner, name string) (id string, err error)
	// Verify checks the created container id against spec before it
	// starts; it reports PhaseCheck when it checks anything.
	Verify(ctx context.Context, id string, spec engine.Spec) error
	// Ops returns the calls on the created container id.
	Ops(id string) Ops
	// Stop sends SIGTERM to container id, then SIGKILL after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove force-removes container id with its anonymous volumes.
	Remove(ctx context.Context, id string) error
	// List returns the containers of every bridge process on the engine.
	List(ctx context.Context) ([]engine.SandboxInfo, error)
}

// NewEngine returns the shared part of the backend called name,
// reached at addr through api. A zero grace means defaultStopGrace.
func NewEngine(name, addr string, api API, log *slog.Logger, grace time.Duration) *Engine {
	if grace <= 0 {
		grace = defaultStopGrace
	}
	return &Engine{name: name, Addr: addr, api: api, Log: log, Owner: CurrentOwner(), grace: grace}
}

// Start implements engine.Engine.Start for a backend.
func (e *Engine) Start(ctx context.Context, spec engine.Spec) (_ engine.Sandbox, err error) {
	defer func() {
		if err != nil && e.api.ConnFailed(err) {
			err = fmt.Errorf("%w: %s at %s: %w", engine.ErrNoEngine, e.name, e.Addr, err)
		}
	}()
	spec = spec.WithDefaults()
	if len(spec.Cmd) == 0 {
		return nil, errors.New("starting sandbox: spec has no command")
	}
	e.left.retry(ctx, e.Log, e.name, e.api.Remove)
	began := time.Now()
	if err := e.ensureImage(ctx, spec.Image); err != nil {
		return nil, err
	}
	Trace(ctx, engine.PhaseImage, began)
	began = time.Now()
	// An engine completes a create whose request was cancelled midway,
	// leaving a container no one knows of: the create is not cancelled,
	// and its container is removed when the caller gave up meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CreateTimeout)
	id, err := e.api.Create(cctx, spec, e.Owner, ContainerName(spec.Session))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	Trace(ctx, engine.PhaseCreate, began)
	sb := newContainerSandbox(e, id, spec.MemoryBytes)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating container: %w", err)
	}
	if err := e.api.Verify(ctx, id, spec); err != nil {
		sb.Close()
		return nil, err
	}
	if err := e.fillInput(ctx, sb, spec); err != nil {
		sb.Close()
		return nil, err
	}
	if err := sb.attachAndStart(ctx); err != nil {
		sb.Close()
		return nil, err
	}
	return sb, nil
}

// ensureImage makes sure ref is present, pulling it when missing.
func (e *Engine) ensureImage(ctx context.Context, ref string) error {
	if _, ok := e.images.Load(ref); ok {
		return nil
	}
	ok, err := e.api.HasImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	if !ok {
		e.Log.Info("pulling sandbox image", "image", ref, "engine", e.name)
		if err := e.api.PullImage(ctx, ref); err != nil {
			return pullError(ref, err)
		}
		e.Log.Info("pulled sandbox image", "image", ref)
	}
	e.images.Store(ref, struct{}{})
	return nil
}

// pullError wraps a failed pull with the image and the setting to change.
func pullError(ref string, err error) error {
	return fmt.Errorf("%w: image %q is not present and pulling it failed (set %s to an image the engine has): %v",
		engine.ErrImage, ref, "MCP_BRIDGE_IMAGE", err)
}

// Close tries once more to remove the containers whose removal failed,
// whatever the state of the callers' contexts.
func (e *Engine) Close() {
	if e.left.len() == 0 {
		return
	}
	ctx, cancel := CleanupContext(CleanupTimeout)
	defer cancel()
	e.left.retry(ctx, e.Log, e.name, e.api.Remove)
}
