package docker

import (
	"context"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/sys/unix"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A dockerContainer is the Docker half of a lifecycle.Sandbox: the calls on
// one container and its attached connection.
type dockerContainer struct {
	api    dockerAPI
	id     string
	hijack types.HijackedResponse // the attached connection, once attached

	insideOnce sync.Once // filesInside's question, asked once
	inside     bool
}

// Attach implements lifecycle.Ops. Docker multiplexes the output streams
// on the attached connection; stdcopy separates them.
func (c *dockerContainer) Attach(ctx context.Context, stdout, stderr *lifecycle.Pipe) (io.WriteCloser, <-chan struct{}, error) {
	hj, err := c.api.ContainerAttach(ctx, c.id, container.AttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return nil, nil, err
	}
	c.hijack = hj
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, err := stdcopy.StdCopy(stdout, stderr, hj.Reader)
		stdout.CloseWithError(err)
		stderr.CloseWithError(err)
	}()
	return &hijackStdin{hj: hj}, copied, nil
}

// Start implements lifecycle.Ops.
func (c *dockerContainer) Start(ctx context.Context) error {
	return c.api.ContainerStart(ctx, c.id, container.StartOptions{})
}

// Wait implements lifecycle.Ops.
func (c *dockerContainer) Wait(ctx context.Context) (engine.ExitStatus, error) {
	statusC, errC := c.api.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
	var st engine.ExitStatus
	select {
	case r := <-statusC:
		st.Code = int(r.StatusCode)
		if r.Error != nil {
			st.EngineError = r.Error.Message
		}
	case err := <-errC:
		return engine.ExitStatus{}, err
	}
	ictx, cancel := lifecycle.CleanupContext(lifecycle.InspectTimeout)
	defer cancel()
	info, err := c.api.ContainerInspect(ictx, c.id)
	// The daemon records an OOM kill from containerd's OOM event, which
	// may come after the exit event (seen under gVisor on a loaded host):
	// a SIGKILLed container is inspected again for a short while before
	// its death is put down to a plain kill.
	for settle := time.Now().Add(oomSettle); err == nil && info.State != nil && !info.State.OOMKilled &&
		st.Code == sigkillExit && time.Now().Before(settle); {
		select {
		case <-ictx.Done():
		case <-time.After(oomPoll):
		}
		info, err = c.api.ContainerInspect(ictx, c.id)
	}
	if err == nil && info.State != nil {
		st.OOMKilled = info.State.OOMKilled
		if info.State.Error != "" {
			st.EngineError = info.State.Error
		}
	}
	return st, nil
}

// sigkillExit is the exit code of a container whose process SIGKILL ended
// (128 + 9), the OOM killer's signal.
const sigkillExit = 137

// oomSettle bounds how long a SIGKILLed container is inspected again for
// an OOM kill recorded late, oomPoll how often.
const (
	oomSettle = 2 * time.Second
	oomPoll   = 100 * time.Millisecond
)

// Detach implements lifecycle.Ops.
func (c *dockerContainer) Detach() {
	if c.hijack.Conn != nil {
		c.hijack.Close()
	}
}

// Signal implements lifecycle.Ops.
func (c *dockerContainer) Signal(ctx context.Context, sig syscall.Signal) error {
	return c.api.ContainerKill(ctx, c.id, unix.SignalName(sig))
}

// A hijackStdin writes to an attached connection; Close half-closes it so
// the container reads EOF while its output keeps flowing.
type hijackStdin struct {
	hj     types.HijackedResponse
	mu     sync.Mutex
	closed bool
}

func (w *hijackStdin) Write(b []byte) (int, error) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return 0, io.ErrClosedPipe
	}
	return w.hj.Conn.Write(b)
}

func (w *hijackStdin) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.hj.CloseWrite()
}
