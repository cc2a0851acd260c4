package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A containerSandbox is a Sandbox backed by a container of a
// containerEngine: the life cycle both backends share. What differs
// between them is behind c.
type containerSandbox struct {
	e        *containerEngine
	c        containerOps
	id       string
	memLimit int64
	// inputFilled is set when the engine filled InDir from Spec.Input
	// before the container's process started.
	inputFilled bool

	stdin          io.WriteCloser // set once attached
	stdout, stderr *boundedPipe

	watchCtx    context.Context // cancelled by Close, ends the wait
	watchCancel context.CancelFunc
	done        chan struct{} // closed when status and waitErr are set
	status      ExitStatus
	waitErr     error
	// started holds the done channels of the goroutines started so far
	// (stream copier, watcher), which Close waits for.
	started []<-chan struct{}

	closed    atomic.Bool // set when Close begins
	closeOnce sync.Once
	closeErr  error
}

// A containerOps is one backend's calls on one container, with the state
// they keep (the attached connection, …).
type containerOps interface {
	// attach attaches the container's standard streams, copying its
	// output to stdout and stderr and closing them, with the stream's
	// error, when the output ends. It returns the container's standard
	// input and, even with an error, the done channel of the goroutine it
	// started, if any.
	attach(ctx context.Context, stdout, stderr *boundedPipe) (stdin io.WriteCloser, done <-chan struct{}, err error)
	// start starts the attached container.
	start(ctx context.Context) error
	// wait blocks until the container has stopped and reports how; it
	// leaves ExitStatus.MemoryLimit to the caller.
	wait(ctx context.Context) (ExitStatus, error)
	// detach releases the attached streams: Close calls it after the
	// container is removed.
	detach()
	// signal sends sig to the container's init process.
	signal(ctx context.Context, sig syscall.Signal) error
	fileCopier
}

// A memoryWatcher is a containerOps that watches the container's memory
// from the host once it started; see oomWatch.
type memoryWatcher interface {
	watchMemory(ctx context.Context)
}

func newContainerSandbox(e *containerEngine, id string, memLimit int64) *containerSandbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &containerSandbox{
		e: e, c: e.api.ops(id), id: id, memLimit: memLimit,
		stdout:      newBoundedPipe(streamBufferBytes),
		stderr:      newBoundedPipe(streamBufferBytes),
		watchCtx:    ctx,
		watchCancel: cancel,
		done:        make(chan struct{}),
	}
}

// attachAndStart attaches the streams before starting, so no early
// output is lost, then starts the container and its exit watcher.
func (s *containerSandbox) attachAndStart(ctx context.Context) error {
	began := time.Now()
	stdin, copied, err := s.c.attach(ctx, s.stdout, s.stderr)
	if copied != nil {
		s.started = append(s.started, copied)
	}
	if err != nil {
		return fmt.Errorf("attaching to container %s: %w", shortID(s.id), err)
	}
	s.stdin = stdin
	tracePhase(ctx, PhaseAttach, began)
	began = time.Now()
	if err := s.c.start(ctx); err != nil {
		return fmt.Errorf("starting container %s: %w", shortID(s.id), err)
	}
	tracePhase(ctx, PhaseStart, began)
	if w, ok := s.c.(memoryWatcher); ok {
		began = time.Now()
		w.watchMemory(ctx)
		tracePhase(ctx, PhaseWatch, began)
	}
	s.started = append(s.started, s.done)
	go s.watch()
	return nil
}

// watch waits for the container to stop and records why it did.
func (s *containerSandbox) watch() {
	defer close(s.done)
	st, err := s.c.wait(s.watchCtx)
	if err != nil {
		s.waitErr = fmt.Errorf("waiting for container %s: %w", shortID(s.id), err)
		return
	}
	st.MemoryLimit = s.memLimit
	s.status = st
}

func (s *containerSandbox) ID() string            { return s.id }
func (s *containerSandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *containerSandbox) Stdout() io.Reader     { return s.stdout }
func (s *containerSandbox) Stderr() io.Reader     { return s.stderr }

// Signal sends sig to the container's init process, which forwards it to
// the main process. It is not part of Sandbox: only tests use it.
func (s *containerSandbox) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := s.c.signal(ctx, sig); err != nil {
		return fmt.Errorf("signalling container %s: %w", shortID(s.id), err)
	}
	return nil
}

func (s *containerSandbox) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
		return s.status, s.waitErr
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

func (s *containerSandbox) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		ctx, cancel := cleanupContext(s.e.grace + cleanupTimeout)
		defer cancel()
		var errs []error
		if err := s.e.api.stop(ctx, s.id, s.e.grace); err != nil {
			errs = append(errs, fmt.Errorf("stopping container %s: %w", shortID(s.id), err))
		}
		if err := s.e.api.remove(ctx, s.id); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s: %w", shortID(s.id), err))
			s.e.left.add(s.id)
		}
		s.c.detach()
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

// A Detacher is a Sandbox that can let its container run on without it:
// a persistent sandbox, which another bridge resumes.
type Detacher interface {
	// Detach releases the sandbox's streams and leaves its container
	// running; the Sandbox is closed after it.
	Detach() error
}

// Detach implements Detacher.
func (s *containerSandbox) Detach() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		s.c.detach()
		s.watchCancel()
		s.stdout.Close()
		s.stderr.Close()
		ctx, cancel := cleanupContext(cleanupTimeout)
		defer cancel()
		for _, ch := range s.started {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
	})
	return nil
}
