package engine

import (
	"context"
	"errors"
	"fmt"
)

// A Resumer is an Engine that reaches a sandbox it did not start in this
// process: another bridge replica (or an earlier process) started it, and
// a handle names it.
type Resumer interface {
	// Resume runs cmd in the running sandbox container ref on the engine
	// named engineName ("" for a single engine, which refuses any
	// other: a Router routes the names of MCP_BRIDGE_ENGINES before,
	// see the function Resume), with its standard streams
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

// A Sweeper removes the persistent sandboxes that have ended: those that
// ended themselves when idle, died, or lost the bridge that made them
// before they became persistent. Any replica may sweep: a sandbox that
// runs is never touched.
type Sweeper interface {
	// SweepExited removes the containers labelled resumable with keyID
	// (LabelResumable) that have exited, and returns how many it removed.
	SweepExited(ctx context.Context, keyID string) (int, error)
}
