package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/sys/unix"
)

// A dockerSandbox is a Sandbox backed by a Docker container.
type dockerSandbox struct {
	d        *Docker
	id       string
	memLimit int64

	hijack         types.HijackedResponse
	stdin          *hijackStdin
	stdout, stderr *boundedPipe

	watchCtx    context.Context // cancelled by Close, ends the wait
	watchCancel context.CancelFunc
	done        chan struct{} // closed when status/waitErr are set
	status      ExitStatus
	waitErr     error
	// started holds the done channels of the goroutines started so far
	// (stream copier, watcher), which Close waits for.
	started []chan struct{}

	closeOnce sync.Once
	closeErr  error
}

func newDockerSandbox(d *Docker, id string, memLimit int64) *dockerSandbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &dockerSandbox{
		d: d, id: id, memLimit: memLimit,
		stdout:      newBoundedPipe(streamBufferBytes),
		stderr:      newBoundedPipe(streamBufferBytes),
		watchCtx:    ctx,
		watchCancel: cancel,
		done:        make(chan struct{}),
	}
}

// attachAndStart attaches the streams before starting, so no early
// output is lost, then starts the container and its exit watcher.
func (s *dockerSandbox) attachAndStart(ctx context.Context) error {
	began := time.Now()
	hj, err := s.d.cli.ContainerAttach(ctx, s.id, container.AttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return fmt.Errorf("attaching to container %s: %w", shortID(s.id), err)
	}
	s.hijack = hj
	s.stdin = &hijackStdin{hj: hj}
	copied := make(chan struct{})
	s.started = append(s.started, copied)
	go func() {
		defer close(copied)
		_, err := stdcopy.StdCopy(s.stdout, s.stderr, hj.Reader)
		s.stdout.CloseWithError(err)
		s.stderr.CloseWithError(err)
	}()
	tracePhase(ctx, PhaseAttach, began)
	began = time.Now()
	if err := s.d.cli.ContainerStart(ctx, s.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting container %s: %w", shortID(s.id), err)
	}
	tracePhase(ctx, PhaseStart, began)
	s.started = append(s.started, s.done)
	go s.watch()
	return nil
}

// watch waits for the container to stop and records why it did.
func (s *dockerSandbox) watch() {
	defer close(s.done)
	statusC, errC := s.d.cli.ContainerWait(s.watchCtx, s.id, container.WaitConditionNotRunning)
	select {
	case r := <-statusC:
		s.status = ExitStatus{Code: int(r.StatusCode), MemoryLimit: s.memLimit}
		if r.Error != nil {
			s.status.EngineError = r.Error.Message
		}
	case err := <-errC:
		s.waitErr = fmt.Errorf("waiting for container %s: %w", shortID(s.id), err)
		return
	}
	ctx, cancel := cleanupContext(inspectTimeout)
	defer cancel()
	info, err := s.d.cli.ContainerInspect(ctx, s.id)
	if err == nil && info.State != nil {
		s.status.OOMKilled = info.State.OOMKilled
		if info.State.Error != "" {
			s.status.EngineError = info.State.Error
		}
	}
}

func (s *dockerSandbox) ID() string            { return s.id }
func (s *dockerSandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *dockerSandbox) Stdout() io.Reader     { return s.stdout }
func (s *dockerSandbox) Stderr() io.Reader     { return s.stderr }

func (s *dockerSandbox) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := s.d.cli.ContainerKill(ctx, s.id, unix.SignalName(sig)); err != nil {
		return fmt.Errorf("signalling container %s: %w", shortID(s.id), err)
	}
	return nil
}

func (s *dockerSandbox) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
		return s.status, s.waitErr
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

func (s *dockerSandbox) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := cleanupContext(s.d.grace + cleanupTimeout)
		defer cancel()
		grace := int(s.d.grace.Seconds() + 0.999)
		var errs []error
		if err := s.d.cli.ContainerStop(ctx, s.id, container.StopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping container %s: %w", shortID(s.id), err))
		}
		if err := s.d.removeContainer(ctx, s.id); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s: %w", shortID(s.id), err))
			s.d.left.add(s.id)
		}
		if s.hijack.Conn != nil {
			s.hijack.Close()
		}
		s.watchCancel()
		s.stdout.Close()
		s.stderr.Close()
		// Nothing of this sandbox outlives Close: wait for its
		// goroutines, as long as the clean-up may take.
		for _, ch := range s.started {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
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
