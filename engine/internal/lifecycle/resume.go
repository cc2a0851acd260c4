package lifecycle

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An ExecAPI is an API that runs commands in its containers.
type ExecAPI interface {
	// InspectSandbox returns the state of container ref: its full ID,
	// whether it runs, its exit code when it does not, and its labels;
	// an error wrapping ErrNoSandbox when there is no such container.
	InspectSandbox(ctx context.Context, ref string) (SandboxState, error)
	// ExecAttach runs cmd in container id, copying its output to stdout
	// and stderr (closed, with the stream's error, when it ends); it
	// returns cmd's standard input, the done channel of the copy, and a
	// function that detaches (closes the streams).
	ExecAttach(ctx context.Context, id string, cmd []string, stdout, stderr *Pipe) (stdin io.WriteCloser, done <-chan struct{}, detach func(), err error)
}

// A SandboxState is what InspectSandbox reports of a container.
type SandboxState struct {
	ID       string
	Running  bool
	ExitCode int
	Labels   map[string]string
}

// Resume implements Resumer.Resume for a backend.
func (e *Engine) Resume(ctx context.Context, engineName, ref string, cmd []string) (engine.Sandbox, error) {
	api, st, err := e.runningSandbox(ctx, engineName, ref, "resuming a sandbox")
	if err != nil {
		return nil, err
	}
	s := &execSandbox{e: e, c: e.api.Ops(st.ID), id: st.ID, stdout: NewPipe(StreamBufferBytes), stderr: NewPipe(StreamBufferBytes)}
	stdin, done, detach, err := api.ExecAttach(ctx, st.ID, cmd, s.stdout, s.stderr)
	if err != nil {
		return nil, fmt.Errorf("attaching to sandbox %s: %w", ShortID(st.ID), err)
	}
	s.stdin, s.done, s.detach = stdin, done, detach
	return s, nil
}

// runningSandbox returns the state of the running sandbox container ref
// on the engine named engineName, with the backend's exec API; doing
// names the operation in the error of a backend that cannot.
func (e *Engine) runningSandbox(ctx context.Context, engineName, ref, doing string) (ExecAPI, SandboxState, error) {
	if engineName != "" {
		return nil, SandboxState{}, fmt.Errorf("%w: %q names an engine, and this bridge has one, unnamed", engine.ErrOtherEngine, engineName)
	}
	api, ok := e.api.(ExecAPI)
	if !ok {
		return nil, SandboxState{}, fmt.Errorf("%s: the %s backend cannot", doing, e.name)
	}
	st, err := api.InspectSandbox(ctx, ref)
	if err != nil {
		return nil, SandboxState{}, err
	}
	if st.Labels[engine.LabelBridge] != "1" {
		return nil, SandboxState{}, fmt.Errorf("%w: container %s is not a sandbox of this bridge", engine.ErrNoSandbox, ShortID(ref))
	}
	if !st.Running {
		return nil, SandboxState{}, &engine.ExitedError{Code: st.ExitCode}
	}
	return api, st, nil
}

// RemoveSandbox implements Resumer.RemoveSandbox for a backend.
func (e *Engine) RemoveSandbox(ctx context.Context, engineName, ref string) error {
	if engineName != "" {
		return fmt.Errorf("%w: %q", engine.ErrOtherEngine, engineName)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.grace+CleanupTimeout)
	defer cancel()
	if err := e.api.Stop(ctx, ref, e.grace); err != nil {
		return fmt.Errorf("stopping container %s: %w", ShortID(ref), err)
	}
	return e.api.Remove(ctx, ref)
}

// An execSandbox is a sandbox reached through a command run in its
// container: its streams are the command's. Closing it ends them only.
type execSandbox struct {
	e              *Engine
	c              Ops // for its files
	id             string
	stdin          io.WriteCloser
	stdout, stderr *Pipe
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
	return OpenFileIn(ctx, s.c, s.id, root, rel, max)
}

// CopyIn implements Files.
func (s *execSandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return CopyInto(ctx, s.c, s.id, dir, r)
}

// Wait waits for the command's streams to end, then reports the
// container's state: its exit when it stopped, else code 0 with
// EngineError saying the attachment ended while it runs.
func (s *execSandbox) Wait(ctx context.Context) (engine.ExitStatus, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return engine.ExitStatus{}, ctx.Err()
	}
	ictx, cancel := CleanupContext(InspectTimeout)
	defer cancel()
	st, err := s.e.api.(ExecAPI).InspectSandbox(ictx, s.id)
	if err != nil {
		return engine.ExitStatus{}, err
	}
	if st.Running {
		return engine.ExitStatus{EngineError: "the attachment to the sandbox ended while it still runs"}, nil
	}
	return engine.ExitStatus{Code: st.ExitCode}, nil
}

// Close detaches from the sandbox, which goes on running.
func (s *execSandbox) Close() error {
	s.once.Do(func() {
		s.detach()
		s.stdout.Close()
		s.stderr.Close()
		select {
		case <-s.done:
		case <-time.After(CleanupTimeout):
		}
	})
	return nil
}

// SweepExited implements Sweeper for a backend.
func (e *Engine) SweepExited(ctx context.Context, keyID string) (int, error) {
	all, err := e.api.List(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	asleep := e.asleep(ctx, time.Now())
	for _, c := range all {
		if keyID == "" || c.Labels[engine.LabelResumable] != keyID || !ended(c.State) || asleep[c.ID] {
			continue
		}
		if err := e.api.Remove(ctx, c.ID); err != nil {
			e.Log.Warn("removing an ended persistent sandbox", "engine", e.name, "id", ShortID(c.ID), "err", err)
			continue
		}
		removed++
	}
	return removed, nil
}

// ended reports whether a container in state (the engine's word) has
// ended: Docker says exited or dead; Podman also says stopped for one
// whose process ended and whose clean-up has not run yet, which a loaded
// machine can leave for seconds.
func ended(state string) bool {
	switch state {
	case "exited", "dead", "stopped":
		return true
	}
	return false
}
