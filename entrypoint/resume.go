package entrypoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// ErrBusy reports a call on a persistent sandbox that another bridge is
// driving: its call runs there now. A later call may find it free.
var ErrBusy = errors.New("the sandbox is running a call of another bridge")

// relaySource is the program a bridge runs in a persistent sandbox to
// reach its runtime (see PROTOCOL.md, "Persistent sandboxes"): it copies
// its standard input to the runtime's socket (SOCKET of runtime/relay.py,
// which serves the connection) and the socket to its standard output,
// until either ends.
const relaySource = `import os, socket, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0mcp-runtime")
def up():
    try:
        while True:
            b = os.read(0, 262144)
            if not b:
                break
            s.sendall(b)
    finally:
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
threading.Thread(target=up, daemon=True).start()
while True:
    b = s.recv(262144)
    if not b:
        break
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
`

// relayCommand is the command of the relay.
func relayCommand() []string {
	return []string{"python3", "-I", "-S", "-u", "-c", relaySource}
}

// A resumeRef names the persistent sandbox a Session resumes.
type resumeRef struct {
	engine, ref string
}

// Resume returns a pinned Session on the persistent sandbox ref (a
// container ID) of the engine engineName ("" for the only one), which
// another bridge, or an earlier process, started and made persistent:
// its first call attaches to the sandbox through a relay run in it, and
// Close detaches, leaving it running. eng must be an engine.Resumer.
func Resume(eng engine.Engine, engineName, ref string, opts *Options) *Session {
	s := New(eng, opts)
	s.pinned = true
	s.resume = &resumeRef{engine: engineName, ref: ref}
	return s
}

// resumeContainer attaches to the persistent sandbox r.
func resumeContainer(ctx context.Context, eng engine.Engine, r *resumeRef, opts *Options, log *slog.Logger) (*container, error) {
	if !engine.MayBe[engine.Resumer](eng) {
		return nil, errors.New("resuming a sandbox: this engine cannot")
	}
	started := time.Now()
	sb, err := engine.Resume(ctx, eng, r.engine, r.ref, relayCommand())
	if err != nil {
		return nil, err
	}
	ctr := newContainer(sb, opts, log)
	go ctr.readStderr()
	ready := make(chan frame, 1)
	go ctr.readFrames(ready)
	o := *opts
	o.siteDirs = nil // the interpreter has them since its start
	return ctr.awaitReady(ctx, ready, &o, started)
}

// goneWhy says why a persistent sandbox cannot be resumed, from the error
// of its resumption.
func goneWhy(err error) string {
	var exited *engine.ExitedError
	switch {
	case errors.As(err, &exited) && exited.Code == engine.ExitIdle:
		return "it expired: it ended itself after its idle timeout without a call"
	case errors.Is(err, engine.ErrSandboxExited):
		return "it has exited (" + err.Error() + ")"
	case errors.Is(err, engine.ErrNoSandbox):
		return "its container no longer exists: it expired and was cleaned up, or was removed (" + err.Error() + ")"
	case errors.Is(err, engine.ErrOtherEngine):
		return err.Error()
	}
	return ""
}

type persistFrame struct {
	T      string `json:"t"`
	IdleMS int64  `json:"idle_ms"`
}

// Persist makes the session's sandbox persistent: it outlives this
// bridge's attachment, another bridge can resume it (Resume), and it
// ends itself after idle without a call (idle <= 0: never).
func (s *Session) Persist(ctx context.Context, idle time.Duration) error {
	ctr, release, err := s.live(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := ctr.send(persistFrame{T: framePersist, IdleMS: max(idle.Milliseconds(), 0)}); err != nil {
		return err
	}
	// From now on a lost attachment is attached again, not replaced.
	s.mu.Lock()
	s.resume = &resumeRef{engine: placedOn(ctr.sb), ref: ctr.sb.ID()}
	s.mu.Unlock()
	return nil
}

// Leave ends the session as Close does, but leaves its sandbox running,
// for another bridge to resume; a sandbox that is not persistent ends by
// itself when its input ends.
func (s *Session) Leave() error {
	s.mu.Lock()
	s.leave = true
	s.mu.Unlock()
	return s.Close()
}

// fmtGone wraps a resumption's failure as ErrPinnedGone when the sandbox
// is gone for good.
func fmtGone(err error) error {
	if why := goneWhy(err); why != "" {
		return fmt.Errorf("%w: %s", ErrPinnedGone, why)
	}
	return err
}

// ReadFile returns the regular file rel under the directory root of the
// session's sandbox (see engine.Files.OpenFile), at most max bytes:
// for a file a call left there, read by any bridge that holds or resumes
// the sandbox. A resumed session attaches first.
func (s *Session) ReadFile(ctx context.Context, root, rel string, max int64) ([]byte, error) {
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	if ctr == nil || ctr.Err() != nil {
		if err := s.acquire(ctx); err != nil {
			return nil, err
		}
		c, _, err := s.ensure(ctx)
		s.release()
		if err != nil {
			return nil, err
		}
		ctr = c
	}
	// Over the lane, the runtime reads it as the sandbox user; without
	// one, the engine's archive of root gives it.
	if root == OutDir {
		if data, err := ctr.readOverLane(ctx, rel, max); !errors.Is(err, errNoLane) {
			return data, err
		}
	}
	files, ok := ctr.sb.(engine.Files)
	if !ok {
		return nil, ErrNoFiles
	}
	rc, _, err := files.OpenFile(ctx, root, rel, max)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// CopyInNow is CopyIn for a session whose call may be running: it does
// not wait for the call when the sandbox is attached (the engine writes
// the files, not the runtime).
func (s *Session) CopyInNow(ctx context.Context, dir string, r io.Reader) error {
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	if ctr == nil || ctr.Err() != nil {
		return s.CopyIn(ctx, dir, r)
	}
	return ctr.copyIn(ctx, dir, r)
}
