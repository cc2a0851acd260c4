package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// defaultStopGrace is the grace period between SIGTERM and SIGKILL when
// the options leave it zero.
const defaultStopGrace = 2 * time.Second

// A containerEngine is what the Docker and Podman backends share: the
// sequence of Start, the images known present, and the clean-up of
// containers (the leftovers of failed removals, the orphans of dead bridge
// processes). What differs between the backends is behind api.
type containerEngine struct {
	name  string // BackendDocker or BackendPodman
	addr  string // the engine's address, for error messages
	api   containerAPI
	log   *slog.Logger
	owner owner
	// podAlive reports whether a bridge pod that owns containers still
	// exists (the Kubernetes backend's); nil: no pod is ever gone.
	podAlive func(context.Context, PodRef) bool
	grace    time.Duration
	images   sync.Map // image reference → struct{}, once known present
	// left holds the containers whose removal failed, tried again at
	// every Start and at Close.
	left leftovers
}

// A containerAPI is one backend's calls on its engine, as a
// containerEngine makes them. Calls on a container that is already gone
// (stop, remove) report no error.
type containerAPI interface {
	// connFailed reports whether err is a failure to reach the engine
	// at all, as opposed to an answer from it.
	connFailed(err error) bool
	// imageExists reports whether the image ref is present.
	imageExists(ctx context.Context, ref string) (bool, error)
	// pullImage pulls the image ref, logging its progress.
	pullImage(ctx context.Context, ref string) error
	// create creates the container of spec (with its defaults applied),
	// owned by o and called name, and returns its ID.
	create(ctx context.Context, spec Spec, o owner, name string) (id string, err error)
	// verify checks the created container id against spec before it
	// starts; it reports PhaseCheck when it checks anything.
	verify(ctx context.Context, id string, spec Spec) error
	// ops returns the calls on the created container id.
	ops(id string) containerOps
	// stop sends SIGTERM to container id, then SIGKILL after grace.
	stop(ctx context.Context, id string, grace time.Duration) error
	// remove force-removes container id with its anonymous volumes.
	remove(ctx context.Context, id string) error
	// List returns the containers of every bridge process on the engine.
	List(ctx context.Context) ([]SandboxInfo, error)
}

// newContainerEngine returns the shared part of the backend called name,
// reached at addr through api. A zero grace means defaultStopGrace.
func newContainerEngine(name, addr string, api containerAPI, log *slog.Logger, grace time.Duration) *containerEngine {
	if grace <= 0 {
		grace = defaultStopGrace
	}
	return &containerEngine{name: name, addr: addr, api: api, log: log, owner: currentOwner(), grace: grace}
}

// start implements Engine.Start for a backend.
func (e *containerEngine) start(ctx context.Context, spec Spec) (_ Sandbox, err error) {
	defer func() {
		if err != nil && e.api.connFailed(err) {
			err = fmt.Errorf("%w: %s at %s: %w", ErrNoEngine, e.name, e.addr, err)
		}
	}()
	spec = spec.withDefaults()
	if len(spec.Cmd) == 0 {
		return nil, errors.New("starting sandbox: spec has no command")
	}
	e.left.retry(ctx, e.log, e.name, e.api.remove)
	began := time.Now()
	if err := e.ensureImage(ctx, spec.Image); err != nil {
		return nil, err
	}
	tracePhase(ctx, PhaseImage, began)
	began = time.Now()
	// An engine completes a create whose request was cancelled midway,
	// leaving a container no one knows of: the create is not cancelled,
	// and its container is removed when the caller gave up meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	id, err := e.api.create(cctx, spec, e.owner, containerName(spec.Session))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	tracePhase(ctx, PhaseCreate, began)
	sb := newContainerSandbox(e, id, spec.MemoryBytes)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating container: %w", err)
	}
	if err := e.api.verify(ctx, id, spec); err != nil {
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
func (e *containerEngine) ensureImage(ctx context.Context, ref string) error {
	if _, ok := e.images.Load(ref); ok {
		return nil
	}
	ok, err := e.api.imageExists(ctx, ref)
	if err != nil {
		return fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	if !ok {
		e.log.Info("pulling sandbox image", "image", ref, "engine", e.name)
		if err := e.api.pullImage(ctx, ref); err != nil {
			return pullError(ref, err)
		}
		e.log.Info("pulled sandbox image", "image", ref)
	}
	e.images.Store(ref, struct{}{})
	return nil
}

// pullError wraps a failed pull with the image and the setting to change.
func pullError(ref string, err error) error {
	return fmt.Errorf("%w: image %q is not present and pulling it failed (set %s to an image the engine has): %v",
		ErrImage, ref, "MCP_BRIDGE_IMAGE", err)
}

// close tries once more to remove the containers whose removal failed,
// whatever the state of the callers' contexts.
func (e *containerEngine) close() {
	if e.left.len() == 0 {
		return
	}
	ctx, cancel := cleanupContext(cleanupTimeout)
	defer cancel()
	e.left.retry(ctx, e.log, e.name, e.api.remove)
}
