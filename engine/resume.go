package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// A Resumer is an Engine that reaches a sandbox it did not start in this
// process: another bridge replica (or an earlier process) started it, and
// a handle names it.
type Resumer interface {
	// Resume runs cmd in the running sandbox container ref on the engine
	// named engineName ("" for a single engine; an entry of
	// MCP_BRIDGE_ENGINES for a Multi), with its standard streams
	// attached. The Sandbox's Close ends cmd's streams and leaves the
	// container running; its ID is the container's.
	Resume(ctx context.Context, engineName, ref string, cmd []string) (Sandbox, error)
	// RemoveSandbox stops and removes the sandbox container ref.
	RemoveSandbox(ctx context.Context, engineName, ref string) error
}

// Sentinel errors of Resume, for errors.Is.
var (
	// ErrNoSandbox reports a container that does not exist (it was
	// removed), or is not a sandbox of this bridge's.
	ErrNoSandbox = errors.New("no such sandbox")
	// ErrSandboxExited reports a sandbox container that is no longer
	// running; the error says its exit code.
	ErrSandboxExited = errors.New("the sandbox has exited")
	// ErrOtherEngine reports an engine name that is none of the bridge's.
	ErrOtherEngine = errors.New("the sandbox's engine is not one of this bridge's")
)

// An ExitedError reports a sandbox container that is no longer running,
// with its exit code; it is ErrSandboxExited for errors.Is.
type ExitedError struct{ Code int }

func (e *ExitedError) Error() string {
	if e.Code == ExitIdle {
		return "the sandbox ended itself after its idle timeout without a call"
	}
	return fmt.Sprintf("%v with code %d", ErrSandboxExited, e.Code)
}

// Is reports whether target is ErrSandboxExited.
func (e *ExitedError) Is(target error) bool { return target == ErrSandboxExited }

// ExitIdle is the exit code of a persistent sandbox that ended itself
// after its idle timeout without a call (the runtime's EXIT_IDLE).
const ExitIdle = 75

// An execAPI is a containerAPI that runs commands in its containers.
type execAPI interface {
	// inspectSandbox returns the state of container ref: its full ID,
	// whether it runs, its exit code when it does not, and its labels;
	// an error wrapping ErrNoSandbox when there is no such container.
	inspectSandbox(ctx context.Context, ref string) (sandboxState, error)
	// execAttach runs cmd in container id, copying its output to stdout
	// and stderr (closed, with the stream's error, when it ends); it
	// returns cmd's standard input, the done channel of the copy, and a
	// function that detaches (closes the streams).
	execAttach(ctx context.Context, id string, cmd []string, stdout, stderr *boundedPipe) (stdin io.WriteCloser, done <-chan struct{}, detach func(), err error)
}

// A sandboxState is what inspectSandbox reports of a container.
type sandboxState struct {
	ID       string
	Running  bool
	ExitCode int
	Labels   map[string]string
}

// resume implements Resumer.Resume for a backend.
func (e *containerEngine) resume(ctx context.Context, engineName, ref string, cmd []string) (Sandbox, error) {
	api, st, err := e.runningSandbox(ctx, engineName, ref, "resuming a sandbox")
	if err != nil {
		return nil, err
	}
	s := &execSandbox{e: e, c: e.api.ops(st.ID), id: st.ID, stdout: newBoundedPipe(streamBufferBytes), stderr: newBoundedPipe(streamBufferBytes)}
	stdin, done, detach, err := api.execAttach(ctx, st.ID, cmd, s.stdout, s.stderr)
	if err != nil {
		return nil, fmt.Errorf("attaching to sandbox %s: %w", shortID(st.ID), err)
	}
	s.stdin, s.done, s.detach = stdin, done, detach
	return s, nil
}

// runningSandbox returns the state of the running sandbox container ref
// on the engine named engineName, with the backend's exec API; doing
// names the operation in the error of a backend that cannot.
func (e *containerEngine) runningSandbox(ctx context.Context, engineName, ref, doing string) (execAPI, sandboxState, error) {
	if engineName != "" {
		return nil, sandboxState{}, fmt.Errorf("%w: %q names an engine, and this bridge has one, unnamed", ErrOtherEngine, engineName)
	}
	api, ok := e.api.(execAPI)
	if !ok {
		return nil, sandboxState{}, fmt.Errorf("%s: the %s backend cannot", doing, e.name)
	}
	st, err := api.inspectSandbox(ctx, ref)
	if err != nil {
		return nil, sandboxState{}, err
	}
	if st.Labels[LabelBridge] != "1" {
		return nil, sandboxState{}, fmt.Errorf("%w: container %s is not a sandbox of this bridge", ErrNoSandbox, shortID(ref))
	}
	if !st.Running {
		return nil, sandboxState{}, &ExitedError{Code: st.ExitCode}
	}
	return api, st, nil
}

// removeSandbox implements Resumer.RemoveSandbox for a backend.
func (e *containerEngine) removeSandbox(ctx context.Context, engineName, ref string) error {
	if engineName != "" {
		return fmt.Errorf("%w: %q", ErrOtherEngine, engineName)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.grace+cleanupTimeout)
	defer cancel()
	if err := e.api.stop(ctx, ref, e.grace); err != nil {
		return fmt.Errorf("stopping container %s: %w", shortID(ref), err)
	}
	return e.api.remove(ctx, ref)
}

// An execSandbox is a sandbox reached through a command run in its
// container: its streams are the command's. Closing it ends them only.
type execSandbox struct {
	e              *containerEngine
	c              containerOps // for its files
	id             string
	stdin          io.WriteCloser
	stdout, stderr *boundedPipe
	done           <-chan struct{}
	detach         func()
	once           sync.Once
}

func (s *execSandbox) ID() string            { return s.id }
func (s *execSandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *execSandbox) Stdout() io.Reader     { return s.stdout }
func (s *execSandbox) Stderr() io.Reader     { return s.stderr }

// OpenFile implements Files.
func (s *execSandbox) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	return openFileIn(ctx, s.c, s.id, root, rel, max)
}

// CopyIn implements Files.
func (s *execSandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return copyInto(ctx, s.c, s.id, dir, r)
}

// Wait waits for the command's streams to end, then reports the
// container's state: its exit when it stopped, else code 0 with
// EngineError saying the attachment ended while it runs.
func (s *execSandbox) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
	ictx, cancel := cleanupContext(inspectTimeout)
	defer cancel()
	st, err := s.e.api.(execAPI).inspectSandbox(ictx, s.id)
	if err != nil {
		return ExitStatus{}, err
	}
	if st.Running {
		return ExitStatus{EngineError: "the attachment to the sandbox ended while it still runs"}, nil
	}
	return ExitStatus{Code: st.ExitCode}, nil
}

// Close detaches from the sandbox, which goes on running.
func (s *execSandbox) Close() error {
	s.once.Do(func() {
		s.detach()
		s.stdout.Close()
		s.stderr.Close()
		select {
		case <-s.done:
		case <-time.After(cleanupTimeout):
		}
	})
	return nil
}

// A Sweeper removes the persistent sandboxes that have ended: those that
// ended themselves when idle, died, or lost the bridge that made them
// before they became persistent. Any replica may sweep: a sandbox that
// runs is never touched.
type Sweeper interface {
	// SweepExited removes the containers labelled resumable with keyID
	// (LabelResumable) that have exited, and returns how many it removed.
	SweepExited(ctx context.Context, keyID string) (int, error)
}

// sweepExited implements Sweeper for a backend.
func (e *containerEngine) sweepExited(ctx context.Context, keyID string) (int, error) {
	all, err := e.api.List(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, c := range all {
		if keyID == "" || c.Labels[LabelResumable] != keyID || (c.State != "exited" && c.State != "dead") {
			continue
		}
		if err := e.api.remove(ctx, c.ID); err != nil {
			e.log.Warn("removing an ended persistent sandbox", "engine", e.name, "id", shortID(c.ID), "err", err)
			continue
		}
		removed++
	}
	return removed, nil
}
