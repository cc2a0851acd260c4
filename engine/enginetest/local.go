// Package enginetest provides an engine.Engine for unit tests of the layers
// above the engine: it runs the sandbox command as a local process, with
// no container and no isolation.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A Local engine runs each sandbox's command as a local process: the real
// runtime and protocol, no container. The argument "sandbox" is dropped, so
// the runtime only ever kills its own descendants. Processes still running
// when the test ends are killed.
type Local struct {
	// T registers the clean-up. Zero: the caller closes its sandboxes.
	T testing.TB
	// Args replaces the command when set (to play a misbehaving sandbox).
	Args []string
}

// Start implements engine.Engine.
func (e Local) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	args := slices.DeleteFunc(slices.Clone(spec.Cmd), func(a string) bool { return a == "sandbox" })
	if e.Args != nil {
		args = e.Args
	}
	if len(args) == 0 {
		return nil, errors.New("starting local sandbox: no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	// The pipes' ends: the child's (closed here once it has them) and
	// ours (closed here only on failure).
	var child, ours []*os.File
	closeAll := func(fs []*os.File) error {
		var errs []error
		for _, f := range fs {
			errs = append(errs, f.Close())
		}
		return errors.Join(errs...)
	}
	var pipes [3][2]*os.File
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("creating pipe: %w", err), closeAll(child), closeAll(ours))
		}
		pipes[i] = [2]*os.File{r, w}
		if i == 0 {
			child, ours = append(child, r), append(ours, w) // stdin
		} else {
			child, ours = append(child, w), append(ours, r) // stdout, stderr
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0][0], pipes[1][1], pipes[2][1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting local sandbox: %w", err), closeAll(child), closeAll(ours))
	}
	s := &localSandbox{cmd: cmd, stdin: pipes[0][1], stdout: pipes[1][0], stderr: pipes[2][0], done: make(chan struct{})}
	go func() {
		// An *exec.ExitError is an exit status, which Wait reports.
		var exit *exec.ExitError
		if err := cmd.Wait(); err != nil && !errors.As(err, &exit) {
			s.waitErr = err
		}
		close(s.done)
	}()
	if err := closeAll(child); err != nil {
		return nil, errors.Join(fmt.Errorf("closing the child's pipe ends: %w", err), s.Close())
	}
	if e.T != nil {
		e.T.Cleanup(func() {
			if err := s.Close(); err != nil {
				e.T.Errorf("closing local sandbox: %v", err)
			}
		})
	}
	return s, nil
}

// A localSandbox is a local process with its standard streams.
type localSandbox struct {
	cmd            *exec.Cmd
	stdin          *os.File
	stdout, stderr *os.File
	done           chan struct{} // closed when the process was waited for
	waitErr        error         // set before done is closed
	once           sync.Once
	closeErr       error
}

func (s *localSandbox) ID() string { return "local" }

// SharesHostFS reports that the sandbox sees the host's files as they
// are: a fast lane is offered at its host path.
func (s *localSandbox) SharesHostFS() bool    { return true }
func (s *localSandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *localSandbox) Stdout() io.Reader     { return s.stdout }
func (s *localSandbox) Stderr() io.Reader     { return s.stderr }

func (s *localSandbox) Wait(ctx context.Context) (engine.ExitStatus, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return engine.ExitStatus{}, ctx.Err()
	}
	if s.waitErr != nil {
		return engine.ExitStatus{}, s.waitErr
	}
	ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return engine.ExitStatus{Code: 128 + int(ws.Signal())}, nil
	}
	return engine.ExitStatus{Code: ws.ExitStatus()}, nil
}

func (s *localSandbox) Close() error {
	s.once.Do(func() {
		var errs []error
		// The process group is gone when the process and its children
		// have exited and been waited for.
		if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("killing local sandbox: %w", err))
		}
		<-s.done
		// The caller may have closed stdin already.
		if err := s.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing stdin: %w", err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
