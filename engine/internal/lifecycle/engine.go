// Package lifecycle is the container skeleton the backends of package
// engine share: the sequence of a sandbox's start (image, create, check,
// input, attach, start), its wait and close, the sandboxes resumed by a
// command run in them, their files through the engine's archive API, and
// the clean-up of containers left behind. A backend supplies the calls
// on its engine (API) and on one container (Ops).
package lifecycle

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"syscall"
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
	pulls    pulls    // the image pulls under way
	// left holds the containers whose removal failed, tried again at
	// every Start and at Close.
	left leftovers
	// AllowWeakLimits lets sandboxes start when the engine cannot apply
	// their limits (LimitsProber).
	AllowWeakLimits bool
	limits          limitsProbe
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

// A LimitsProber is an API that can tell whether its engine applies a
// sandbox's memory, pids and CPU limits.
type LimitsProber interface {
	// WeakLimits says why the engine cannot apply them; "" when it can.
	WeakLimits(ctx context.Context) (string, error)
}

// A limitsProbe keeps an engine's answer about its limits once it was
// had, and the question under way.
type limitsProbe struct {
	mu     sync.Mutex
	run    *limitsRun
	warned bool
}

// A limitsRun is one question of the engine; done is closed when why and
// err are set.
type limitsRun struct {
	done chan struct{}
	why  string
	err  error
}

// An Ops is one backend's calls on one container, with the state
// they keep (the attached connection, …).
type Ops interface {
	// Attach attaches the container's standard streams, copying its
	// output to stdout and stderr and closing them, with the stream's
	// error, when the output ends. It returns the container's standard
	// input and, even with an error, the done channel of the goroutine it
	// started, if any.
	Attach(ctx context.Context, stdout, stderr *Pipe) (stdin io.WriteCloser, done <-chan struct{}, err error)
	// Start starts the attached container.
	Start(ctx context.Context) error
	// Wait blocks until the container has stopped and reports how; it
	// leaves ExitStatus.MemoryLimit to the caller.
	Wait(ctx context.Context) (engine.ExitStatus, error)
	// Detach releases the attached streams: Close calls it after the
	// container is removed.
	Detach()
	// Signal sends sig to the container's init process.
	Signal(ctx context.Context, sig syscall.Signal) error
	Copier
}

// NewEngine returns the shared part of the backend called name,
// reached at addr through api. A zero grace means defaultStopGrace.
func NewEngine(name, addr string, api API, log *slog.Logger, grace time.Duration) *Engine {
	if grace <= 0 {
		grace = defaultStopGrace
	}
	return &Engine{name: name, Addr: addr, api: api, Log: log, Owner: CurrentOwner(), grace: grace}
}

// Close ends the image pulls under way, and tries once more to remove the
// containers whose removal failed, whatever the state of the callers'
// contexts.
func (e *Engine) Close() {
	e.pulls.stop()
	if e.left.len() == 0 {
		return
	}
	ctx, cancel := CleanupContext(CleanupTimeout)
	defer cancel()
	e.left.retry(ctx, e.Log, e.name, e.api.Remove)
}

// Leftovers is the number of containers whose removal failed and that
// are kept to be tried again.
func (e *Engine) Leftovers() int { return e.left.len() }
