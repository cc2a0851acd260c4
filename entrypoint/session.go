package entrypoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An RPCHandler answers a request that sandbox code sent with the
// runtime's rpc helpers. Its result is encoded as JSON; an error is
// raised in the sandbox as RPCError with the error's text. It is called
// concurrently.
type RPCHandler func(ctx context.Context, payload json.RawMessage) (any, error)

// Defaults for the zero values of Options.
const (
	defaultIdleTimeout    = 300 * time.Second
	defaultMaxOutputBytes = 1 << 20
	defaultInterruptGrace = 2 * time.Second
	defaultReadyTimeout   = 30 * time.Second
	defaultMaxRPCs        = 64
)

// Options configure a Session. The zero value is ready to use.
type Options struct {
	// Spec is the sandbox's spec; its Cmd is replaced by Command(). Zero:
	// the engine's defaults.
	Spec engine.Spec
	// Logger receives lifecycle reports. Zero: discarded.
	Logger *slog.Logger
	// RPC answers the sandbox's RPC requests. Zero: every request fails.
	RPC RPCHandler
	// IdleTimeout stops the container after this long without a call;
	// the next call starts a fresh one. Zero: 300 s;
	// negative: never.
	IdleTimeout time.Duration
	// MaxOutputBytes caps the output kept per call and stream. Zero: 1 MiB;
	// negative: no cap.
	MaxOutputBytes int
	// InterruptGrace is how long a timed-out call may take to stop after
	// its interrupt before the container is killed. Zero: 2 s.
	InterruptGrace time.Duration
	// ReadyTimeout bounds the runtime's start. Zero: 30 s.
	ReadyTimeout time.Duration
	// MaxConcurrentRPCs bounds the RPCs handled at once; further requests
	// wait. Zero: 64.
	MaxConcurrentRPCs int
	// Init, when set, returns code run in every new interpreter before its
	// first call (to install helpers). A failure fails the start. Zero:
	// nothing runs.
	Init func() string
	// OnOutput, when set, receives each piece of a call's output as it
	// arrives (within the cap), stream "stdout" or "stderr". It runs on the
	// session's reader and must not block. Zero: output is only returned
	// in the Result.
	OnOutput func(stream, data string)
}

func (o *Options) maxRPCs() int                { return orDefault(o.MaxConcurrentRPCs, defaultMaxRPCs) }
func (o *Options) readyTimeout() time.Duration { return orDefault(o.ReadyTimeout, defaultReadyTimeout) }
func (o *Options) interruptGrace() time.Duration {
	return orDefault(o.InterruptGrace, defaultInterruptGrace)
}
func (o *Options) idleTimeout() time.Duration { return orDefault(o.IdleTimeout, defaultIdleTimeout) }

func (o *Options) maxOutput() int {
	switch {
	case o.MaxOutputBytes < 0:
		return 0
	case o.MaxOutputBytes == 0:
		return defaultMaxOutputBytes
	}
	return o.MaxOutputBytes
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Phases of a session's start reported to an engine.StartTrace, after the
// engine's own (engine.PhaseImage … engine.PhaseStart).
const (
	PhaseInterpreter = "interpreter" // container started → the bootstrap runs (Python's own start)
	PhaseRuntime     = "runtime"     // the runtime is read, compiled and run up to its ready frame
	PhaseReady       = "ready"       // the ready frame reaches the host
	PhaseInit        = "init"        // Options.Init runs (the bridge's sandbox API)
)

// A Status is how a call ended.
type Status string

// Call statuses.
const (
	// StatusSuccess: the code ran to its end.
	StatusSuccess Status = "success"
	// StatusError: an exception escaped the code, or the sandbox failed.
	StatusError Status = "error"
	// StatusTimeout: the code ran past its timeout and was stopped.
	StatusTimeout Status = "timeout"
	// StatusExit: the code raised SystemExit (sys.exit).
	StatusExit Status = "exit"
)

// A Result is the outcome of one call.
type Result struct {
	Status Status
	Stdout string
	Stderr string
	// Truncated reports that output beyond the cap was dropped; the text
	// then ends with a marker saying how much.
	Truncated bool
	// ExitCode is the SystemExit code, for StatusExit.
	ExitCode int
	// ExceptionType, ExceptionMessage and Traceback describe the
	// exception, for StatusError and StatusTimeout.
	ExceptionType    string
	ExceptionMessage string
	Traceback        string
	// Duration is the call's run time as the sandbox measured it (or the
	// host's wait, when the sandbox did not answer).
	Duration time.Duration
	// StateLost reports that this call did not run in the interpreter of
	// the previous calls, or that its own interpreter is gone, and Notice
	// says why.
	StateLost bool
	Notice    string
	// Python is the sandbox interpreter's version.
	Python string

	// began reports that the sandbox said the code was about to run.
	began bool
}

// A Session is one warm sandbox whose interpreter keeps its globals from
// call to call. Calls are serialized. A dead container is replaced on the
// next call, which is told that the state was lost.
type Session struct {
	eng  engine.Engine
	opts Options
	log  *slog.Logger
	sem  chan struct{} // held by Execute, Start and the idle stop
	seq  atomic.Int64

	mu     sync.Mutex
	box    *runtimeBox
	lost   string // why the previous interpreter is gone, for the next call
	idle   *time.Timer
	closed bool

	discards  sync.WaitGroup // containers being stopped in the background
	closeOnce sync.Once
	closeErr  error
}

// ErrSessionClosed reports a call on a closed Session.
var ErrSessionClosed = errors.New("session closed")

// New returns a Session whose sandboxes eng starts; no container starts
// until Start or Execute. opts may be nil.
func New(eng engine.Engine, opts *Options) *Session {
	s := &Session{eng: eng, sem: make(chan struct{}, 1)}
	if opts != nil {
		s.opts = *opts
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Start starts the sandbox now, so the first call finds it warm.
func (s *Session) Start(ctx context.Context) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	_, _, err := s.ensure(ctx)
	return err
}

// Python returns the sandbox interpreter's version, once started.
func (s *Session) Python() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.box == nil {
		return ""
	}
	return s.box.python
}

func (s *Session) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	closed := s.closed
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	if closed {
		<-s.sem
		return ErrSessionClosed
	}
	return nil
}

func (s *Session) release() {
	s.mu.Lock()
	if !s.closed && s.box != nil && s.opts.idleTimeout() > 0 {
		box := s.box
		s.idle = time.AfterFunc(s.opts.idleTimeout(), func() { s.stopIdle(box) })
	}
	s.mu.Unlock()
	<-s.sem
}

// stopIdle stops box if it is still the session's and no call runs.
func (s *Session) stopIdle(box *runtimeBox) {
	select {
	case s.sem <- struct{}{}:
	default:
		return // a call is running; release re-arms the timer
	}
	defer func() { <-s.sem }()
	s.mu.Lock()
	if s.box != box {
		s.mu.Unlock()
		return
	}
	s.box = nil
	s.lost = fmt.Sprintf("the sandbox was stopped after %v without calls", s.opts.idleTimeout())
	s.mu.Unlock()
	s.log.Info("stopping idle sandbox", "idle", s.opts.idleTimeout())
	box.Close()
}

// ensure returns the live box, starting one when there is none or the
// previous one died; notice says why state was lost, if it was.
func (s *Session) ensure(ctx context.Context) (*runtimeBox, string, error) {
	s.mu.Lock()
	box := s.box
	s.mu.Unlock()
	if box != nil {
		err := box.Err()
		if err == nil {
			return box, "", nil
		}
		s.discard(box, err.Error())
	}
	start := time.Now()
	box, err := startBox(ctx, s.eng, &s.opts, s.log)
	if err != nil {
		return nil, "", s.startError(err)
	}
	if s.opts.Init != nil {
		began := time.Now()
		if err := s.initialize(ctx, box); err != nil {
			s.discard(box, err.Error())
			return nil, "", s.startError(err)
		}
		engine.TracePhase(ctx, PhaseInit, time.Since(began))
	}
	s.log.Info("sandbox ready", "python", box.python, "runtime", box.version, "id", box.sb.ID(), "took", time.Since(start))
	s.mu.Lock()
	s.box = box
	notice := s.lost
	s.lost = ""
	s.mu.Unlock()
	return box, notice, nil
}

// startError wraps the failure to start a sandbox, saying why the previous
// one is gone when it was lost, so that the caller learns of the lost state
// now and not only from the notice of the next call that succeeds.
func (s *Session) startError(err error) error {
	s.mu.Lock()
	lost := s.lost
	s.mu.Unlock()
	if lost != "" {
		return fmt.Errorf("starting sandbox (the previous one and its state are gone: %s): %w", lost, err)
	}
	return fmt.Errorf("starting sandbox: %w", err)
}

// initialize runs the Init code in a new box.
func (s *Session) initialize(ctx context.Context, box *runtimeBox) error {
	res, err := s.run(ctx, box, s.opts.Init(), s.opts.readyTimeout())
	if err != nil {
		return fmt.Errorf("initializing the interpreter: %w", err)
	}
	if res.Status != StatusSuccess {
		return fmt.Errorf("initializing the interpreter: %s %s: %s\n%s", res.Status, res.ExceptionType, res.ExceptionMessage, res.Traceback)
	}
	return nil
}

// discard drops box (closing its container) and records why its state is
// gone.
func (s *Session) discard(box *runtimeBox, why string) {
	s.mu.Lock()
	if s.box == box {
		s.box = nil
		s.lost = why
	}
	s.mu.Unlock()
	s.discards.Add(1)
	go func() {
		defer s.discards.Done()
		box.Close()
	}()
}

// Execute runs code in the session's interpreter, stopping it after
// timeout (0: no limit). A timed-out call is interrupted first, so the
// session keeps its state; only when the code does not stop within the
// grace period is the container killed and replaced. The error is non-nil
// when the sandbox itself failed (engine, container death, protocol); the
// Result then carries what output arrived.
func (s *Session) Execute(ctx context.Context, code string, timeout time.Duration) (*Result, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	box, notice, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.run(ctx, box, code, timeout)
	if errors.Is(err, ErrSandboxDied) && !res.began && ctx.Err() == nil {
		// The sandbox died before the code began: between calls, and
		// noticed only now (gVisor delivers a kill of its init after the
		// call that sent it has returned). None of the code ran, so it
		// runs on a fresh sandbox, whose notice says why the state is
		// gone.
		s.log.Info("the sandbox died before the call's code began; running it on a fresh sandbox", "err", err)
		if box, notice, err = s.ensure(ctx); err != nil {
			return nil, err
		}
		res, err = s.run(ctx, box, code, timeout)
	}
	if notice != "" {
		res.StateLost = true
		res.Notice = "a new sandbox was started and earlier variables, imports and definitions are gone: " + notice
	}
	res.Python = box.python
	return res, err
}

// run performs one call on box.
func (s *Session) run(ctx context.Context, box *runtimeBox, code string, timeout time.Duration) (res *Result, err error) {
	c := &callState{
		id:       strconv.FormatInt(s.seq.Add(1), 10),
		result:   make(chan frame, 1),
		onOutput: s.opts.OnOutput,
	}
	defer func() {
		if res != nil {
			res.began = c.started.Load()
		}
	}()
	c.stdout.max, c.stderr.max = s.opts.maxOutput(), s.opts.maxOutput()
	c.ctx, c.cancel = context.WithCancel(box.ctx)
	defer c.cancel()
	box.mu.Lock()
	box.call = c
	box.mu.Unlock()
	began := time.Now()
	if err := box.send(execFrame{T: frameExec, ID: c.id, Code: code, MaxOutput: s.opts.maxOutput()}); err != nil {
		return s.died(box, c, began, fmt.Errorf("%w: sending the code: %v", ErrSandboxDied, err))
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case f := <-c.result:
		return s.finish(c, f, false), nil
	case <-box.dead:
		return s.died(box, c, began, box.err)
	case <-deadline:
		return s.interrupt(box, c, began, fmt.Sprintf("the call ran past its timeout of %v", timeout))
	case <-ctx.Done():
		res, _ := s.interrupt(box, c, began, "the caller went away")
		return res, ctx.Err()
	}
}

// interrupt stops the running call: KeyboardInterrupt first, the
// container after the grace period.
func (s *Session) interrupt(box *runtimeBox, c *callState, began time.Time, why string) (*Result, error) {
	if err := box.send(interruptFrame{T: frameInterrupt, ID: c.id}); err != nil {
		s.log.Debug("sending interrupt", "err", err)
	}
	grace := time.NewTimer(s.opts.interruptGrace())
	defer grace.Stop()
	select {
	case f := <-c.result:
		if f.Status != statusInterrupt {
			return s.finish(c, f, false), nil // it ended on its own meanwhile
		}
		res := s.finish(c, f, true)
		res.Notice = why + "; it was interrupted and the session kept its state"
		return res, nil
	case <-box.dead:
		return s.died(box, c, began, box.err)
	case <-grace.C:
	}
	s.log.Warn("call did not stop after its interrupt; replacing the sandbox", "grace", s.opts.interruptGrace())
	reason := why + fmt.Sprintf(" and did not stop within %v of its interrupt, so its sandbox was killed", s.opts.interruptGrace())
	s.discard(box, reason)
	res := s.partial(c, began)
	res.Status = StatusTimeout
	res.StateLost = true
	res.Notice = reason + "; the next call starts a fresh interpreter and earlier variables, imports and definitions are gone"
	return res, nil
}

// died reports a call whose sandbox failed.
func (s *Session) died(box *runtimeBox, c *callState, began time.Time, err error) (*Result, error) {
	s.discard(box, err.Error())
	res := s.partial(c, began)
	res.Status = StatusError
	res.StateLost = true
	res.Notice = err.Error()
	return res, err
}

// partial returns the output a call produced before it was abandoned.
func (s *Session) partial(c *callState, began time.Time) *Result {
	res := &Result{Duration: time.Since(began)}
	var t1, t2 bool
	res.Stdout, t1 = c.stdout.text(0)
	res.Stderr, t2 = c.stderr.text(0)
	res.Truncated = t1 || t2
	return res
}

// finish turns a result frame into a Result.
func (s *Session) finish(c *callState, f frame, timedOut bool) *Result {
	res := &Result{
		Duration:         time.Duration(f.DurationMS * float64(time.Millisecond)),
		ExceptionType:    f.ExcType,
		ExceptionMessage: f.ExcMessage,
		Traceback:        f.Traceback,
	}
	var t1, t2 bool
	res.Stdout, t1 = c.stdout.text(f.Dropped["stdout"])
	res.Stderr, t2 = c.stderr.text(f.Dropped["stderr"])
	res.Truncated = t1 || t2
	switch {
	case timedOut:
		res.Status = StatusTimeout
	case f.Status == statusOK:
		res.Status = StatusSuccess
	case f.Status == statusExit:
		res.Status, res.ExitCode = StatusExit, f.ExitCode
	default: // error, or interrupted by something else than our timeout
		res.Status = StatusError
	}
	return res
}

// Close stops the sandbox and waits until its container is removed. A
// call in flight fails. Concurrent and later calls wait for the first.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		box := s.box
		s.box = nil
		if s.idle != nil {
			s.idle.Stop()
		}
		s.mu.Unlock()
		if box != nil {
			s.closeErr = box.Close()
		}
		s.discards.Wait()
	})
	return s.closeErr
}
