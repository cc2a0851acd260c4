package engine

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
)

// A dockerContainer is the Docker half of a containerSandbox: the calls on
// one container and its attached connection.
type dockerContainer struct {
	api    dockerAPI
	id     string
	hijack types.HijackedResponse // the attached connection, once attached
}

// attach implements containerOps. Docker multiplexes the output streams
// on the attached connection; stdcopy separates them.
func (c *dockerContainer) attach(ctx context.Context, stdout, stderr *boundedPipe) (io.WriteCloser, <-chan struct{}, error) {
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

// start implements containerOps.
func (c *dockerContainer) start(ctx context.Context) error {
	return c.api.ContainerStart(ctx, c.id, container.StartOptions{})
}

// wait implements containerOps.
func (c *dockerContainer) wait(ctx context.Context) (ExitStatus, error) {
	statusC, errC := c.api.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
	var st ExitStatus
	select {
	case r := <-statusC:
		st.Code = int(r.StatusCode)
		if r.Error != nil {
			st.EngineError = r.Error.Message
		}
	case err := <-errC:
		return ExitStatus{}, err
	}
	ictx, cancel := cleanupContext(inspectTimeout)
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

// detach implements containerOps.
func (c *dockerContainer) detach() {
	if c.hijack.Conn != nil {
		c.hijack.Close()
	}
}

// signal implements containerOps.
func (c *dockerContainer) signal(ctx context.Context, sig syscall.Signal) error {
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
