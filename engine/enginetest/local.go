// Package enginetest provides an engine.Engine for unit tests of the layers
// above the engine: it runs the sandbox command as a local process, with
// no container and no isolation.
package enginetest

import (
	"context"
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
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	s := &localSandbox{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.done)
	}()
	if e.T != nil {
		e.T.Cleanup(func() { s.Close() })
	}
	return s, nil
}

// A localSandbox is a local process with its standard streams.
type localSandbox struct {
	cmd            *exec.Cmd
	stdin          *os.File
	stdout, stderr *os.File
	done           chan struct{}
	once           sync.Once
}

func (s *localSandbox) ID() string            { return "local" }
func (s *localSandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *localSandbox) Stdout() io.Reader     { return s.stdout }
func (s *localSandbox) Stderr() io.Reader     { return s.stderr }

func (s *localSandbox) Signal(_ context.Context, sig syscall.Signal) error {
	return s.cmd.Process.Signal(sig)
}

func (s *localSandbox) Wait(ctx context.Context) (engine.ExitStatus, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return engine.ExitStatus{}, ctx.Err()
	}
	ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return engine.ExitStatus{Code: 128 + int(ws.Signal())}, nil
	}
	return engine.ExitStatus{Code: ws.ExitStatus()}, nil
}

func (s *localSandbox) Close() error {
	s.once.Do(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		s.stdin.Close()
	})
	return nil
}
