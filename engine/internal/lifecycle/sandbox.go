package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A Sandbox is an engine.Sandbox backed by a container of an Engine: the
// life cycle the backends share. What differs between them is behind c.
type Sandbox struct {
	e        *Engine
	c        Ops
	id       string
	memLimit int64
	// inputFilled is set when the engine filled InDir from Spec.Input
	// before the container's process started.
	inputFilled bool

	stdin          io.WriteCloser // set once attached
	stdout, stderr *Pipe

	watchCtx    context.Context // cancelled by Close, ends the wait
	watchCancel context.CancelFunc
	done        chan struct{} // closed when status and waitErr are set
	status      engine.ExitStatus
	waitErr     error
	// started holds the done channels of the goroutines started so far
	// (stream copier, watcher), which Close waits for.
	started []<-chan struct{}

	closed    atomic.Bool // set when Close begins
	closeOnce sync.Once
	closeErr  error
}

// A MemoryWatcher is an Ops that watches the container's memory
// from the host once it started; see oomWatch.
type MemoryWatcher interface {
	// WatchMemory starts watching the started container's memory.
	WatchMemory(ctx context.Context)
}

func newContainerSandbox(e *Engine, id string, memLimit int64) *Sandbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &Sandbox{
		e: e, c: e.api.Ops(id), id: id, memLimit: memLimit,
		stdout:      NewPipe(StreamBufferBytes),
		stderr:      NewPipe(StreamBufferBytes),
		watchCtx:    ctx,
		watchCancel: cancel,
		done:        make(chan struct{}),
	}
}

// attachAndStart attaches the streams before starting, so no early
// output is lost, then starts the container and its exit watcher.
func (s *Sandbox) attachAndStart(ctx context.Context) error {
	began := time.Now()
	stdin, copied, err := s.c.Attach(ctx, s.stdout, s.stderr)
	if copied != nil {
		s.started = append(s.started, copied)
	}
	if err != nil {
		return fmt.Errorf("attaching to container %s: %w", ShortID(s.id), err)
	}
	s.stdin = stdin
	Trace(ctx, engine.PhaseAttach, began)
	began = time.Now()
	if err := s.c.Start(ctx); err != nil {
		return fmt.Errorf("starting container %s: %w", ShortID(s.id), err)
	}
	Trace(ctx, engine.PhaseStart, began)
	if w, ok := s.c.(MemoryWatcher); ok {
		began = time.Now()
		w.WatchMemory(ctx)
		Trace(ctx, engine.PhaseWatch, began)
	}
	s.started = append(s.started, s.done)
	go s.watch()
	return nil
}

// watch waits for the container to stop and records why it did.
func (s *Sandbox) watch() {
	defer close(s.done)
	st, err := s.c.Wait(s.watchCtx)
	if err != nil {
		s.waitErr = fmt.Errorf("waiting for container %s: %w", ShortID(s.id), err)
		return
	}
	st.MemoryLimit = s.memLimit
	s.status = st
}

func (s *Sandbox) ID() string            { return s.id }
func (s *Sandbox) Stdin() io.WriteCloser { return s.stdin }
func (s *Sandbox) Stdout() io.Reader     { return s.stdout }
func (s *Sandbox) Stderr() io.Reader     { return s.stderr }

// Signal sends sig to the container's init process, which forwards it to
// the main process. It is not part of Sandbox: only tests use it.
func (s *Sandbox) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := s.c.Signal(ctx, sig); err != nil {
		return fmt.Errorf("signalling container %s: %w", ShortID(s.id), err)
	}
	return nil
}

func (s *Sandbox) Wait(ctx context.Context) (engine.ExitStatus, error) {
	select {
	case <-s.done:
		return s.status, s.waitErr
	case <-ctx.Done():
		return engine.ExitStatus{}, ctx.Err()
	}
}

func (s *Sandbox) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		ctx, cancel := CleanupContext(s.e.grace + CleanupTimeout)
		defer cancel()
		var errs []error
		if err := s.e.api.Stop(ctx, s.id, s.e.grace); err != nil {
			errs = append(errs, fmt.Errorf("stopping container %s: %w", ShortID(s.id), err))
		}
		if err := s.e.api.Remove(ctx, s.id); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s: %w", ShortID(s.id), err))
			s.e.left.add(s.id)
		}
		s.c.Detach()
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

// Detach implements Detacher.
func (s *Sandbox) Detach() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		s.c.Detach()
		s.watchCancel()
		s.stdout.Close()
		s.stderr.Close()
		ctx, cancel := CleanupContext(CleanupTimeout)
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

// Running is the number of the sandbox's goroutines (stream copier,
// watcher) that have not returned; after Close it is zero.
func (s *Sandbox) Running() int {
	n := 0
	for _, ch := range s.started {
		select {
		case <-ch:
		default:
			n++
		}
	}
	return n
}

var _ engine.Files = (*Sandbox)(nil)

// OpenFile implements Files.
func (s *Sandbox) OpenFile(ctx context.Context, root, rel string, max int64) (io.ReadCloser, int64, error) {
	if s.closed.Load() {
		return nil, 0, fmt.Errorf("opening %s in container %s: sandbox %w", rel, ShortID(s.id), engine.ErrClosed)
	}
	return OpenFileIn(ctx, s.c, s.id, root, rel, max)
}

// Archive is the engine's own tar archive of the directory dir in the
// sandbox, as CopyOut returns it (names of the form base/…, links as
// links); the caller closes it.
func (s *Sandbox) Archive(ctx context.Context, dir string) (io.ReadCloser, error) {
	return s.c.CopyOut(ctx, dir)
}

// CopyIn implements Files.
func (s *Sandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	if s.closed.Load() {
		return fmt.Errorf("copying into %s of container %s: sandbox %w", dir, ShortID(s.id), engine.ErrClosed)
	}
	return CopyInto(ctx, s.c, s.id, dir, r)
}
