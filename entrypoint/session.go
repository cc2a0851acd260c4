package entrypoint

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
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
	defaultMaxImages      = 10
	defaultMaxImageBytes  = 8 << 20
)

// Options configure a Session. The zero value is ready to use.
type Options struct {
	// RPCBudget bounds the RPC payload bytes held in flight, shared by
	// the sessions of one bridge (rpc_budget.go). Zero: the defaults
	// (256 MiB, 32 MiB a sandbox), for this session alone.
	RPCBudget *RPCBudget
	// Spec is the sandbox's spec; its Cmd is replaced by the command
	// that starts the runtime. Zero: the engine's defaults.
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
	// MaxImages bounds the images one call returns; more are dropped with
	// a note. Zero: 10; negative: none.
	MaxImages int
	// MaxImageBytes bounds the bytes of the images one call returns.
	// Zero: 8 MiB.
	MaxImageBytes int64
	// InputDir is a host directory copied into the sandbox's /workspace/in
	// (read-only for the code) whenever a sandbox starts. Zero: none.
	InputDir string
	// InputMaxBytes bounds the bytes of the files of InputDir; a larger
	// directory fails the start with ErrInputTooLarge. Zero: 64 MiB.
	InputMaxBytes int64
	// Init, when set, returns code run in every new interpreter before its
	// first call (to install helpers). A failure fails the start. Zero:
	// nothing runs.
	Init func() string
	// Egress, when set, receives every connection sandbox code opens
	// through the runtime's proxy endpoint, as a net.Conn it owns and must
	// close; it runs on a goroutine of its own per connection. Zero: no
	// endpoint in the sandbox.
	Egress func(conn net.Conn)
	// EgressInstall, when set with Egress, receives the connections of
	// the runtime's install endpoint (pip run by runtime.install), which
	// the host limits to the package indexes. Zero: they are closed at
	// once.
	EgressInstall func(conn net.Conn)
	// EgressCA is PEM the sandbox trusts besides its system roots, for
	// a gateway that terminates TLS. Zero: none.
	EgressCA []byte
	// Lanes, when set, gives each sandbox a fast lane to the bridge that
	// carries its frames instead of the engine's stream (lane.go), on the
	// engines whose sandboxes reach it. Zero: the stream only.
	Lanes *Lanes
	// Prepare, when set, runs before each sandbox starts: it may amend the
	// sandbox's spec (mount a package set) and returns directories the
	// runtime adds to its import path before the first call, with
	// site.addsitedir (so .pth files work). Its error fails the start.
	// Zero: nothing.
	Prepare func(ctx context.Context, spec *engine.Spec) (siteDirs []string, err error)
	// Sleep, when set, puts a sandbox idle past IdleTimeout to sleep
	// instead of stopping it (sleep.go): the next call wakes it with its
	// state. Zero: an idle sandbox stops and its state is gone.
	Sleep *SleepOptions

	siteDirs []string // what Prepare returned, for the container's start
}

func (o *Options) maxRPCs() int                { return cmp.Or(o.MaxConcurrentRPCs, defaultMaxRPCs) }
func (o *Options) readyTimeout() time.Duration { return cmp.Or(o.ReadyTimeout, defaultReadyTimeout) }
func (o *Options) interruptGrace() time.Duration {
	return cmp.Or(o.InterruptGrace, defaultInterruptGrace)
}
func (o *Options) idleTimeout() time.Duration { return cmp.Or(o.IdleTimeout, defaultIdleTimeout) }

// ImageLimits returns how many images, and how many bytes of them, one
// call returns at most, the defaults applied.
func (o *Options) ImageLimits() (count int, bytes int64) { return o.maxImages(), o.maxImageBytes() }

func (o *Options) maxImages() int {
	if o.MaxImages < 0 {
		return 0
	}
	return cmp.Or(o.MaxImages, defaultMaxImages)
}
func (o *Options) maxImageBytes() int64 { return cmp.Or(o.MaxImageBytes, defaultMaxImageBytes) }
func (o *Options) inputMaxBytes() int64 { return cmp.Or(o.InputMaxBytes, defaultInputMaxBytes) }

func (o *Options) maxOutput() int {
	switch {
	case o.MaxOutputBytes < 0:
		return 0
	case o.MaxOutputBytes == 0:
		return defaultMaxOutputBytes
	}
	return o.MaxOutputBytes
}

// Phases of a session's start reported to an engine.StartTrace, after the
// engine's own (engine.PhaseImage … engine.PhaseStart).
const (
	PhaseInterpreter = "interpreter" // container started → the bootstrap runs (Python's own start)
	PhaseRuntime     = "runtime"     // the runtime is read, compiled and run up to its ready frame
	PhaseReady       = "ready"       // the ready frame reaches the host
	PhaseInit        = "init"        // Options.Init runs (the bridge's sandbox API)
)

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
	ctr    *container
	lost   string // why the previous interpreter is gone, for the next call
	placed string // the engine the last sandbox ran on, when the engine names it
	idle   *time.Timer
	closed bool
	// pinned says the sandbox it has is its only one: once that is gone,
	// calls fail with ErrPinnedGone instead of starting another.
	pinned bool
	// resume names the persistent sandbox it attaches to (Resume); nil
	// when it starts its own.
	resume *resumeRef
	// leave says Close leaves the sandbox running (Leave).
	leave bool
	// ownsSleeper says the sandbox became persistent only to sleep (or
	// was forked for this session): Close removes it.
	ownsSleeper bool
	// asleep is when the sandbox went to sleep (zero: it did not);
	// woke is how long the last wake took, for the next call's notice.
	asleep time.Time
	woke   time.Duration

	discards  sync.WaitGroup // containers being stopped in the background
	closeOnce sync.Once
	closeErr  error
}

// ErrSessionClosed reports a call on a closed Session.
var ErrSessionClosed = errors.New("session closed")

// ErrPinnedGone reports a call on a pinned session whose sandbox is gone
// (stopped idle, died, killed); the error says why.
var ErrPinnedGone = errors.New("the sandbox is gone")

// ErrStart wraps every failure to start a sandbox, for errors.Is.
var ErrStart = errors.New("starting sandbox")

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

// SetIdleTimeout replaces Options.IdleTimeout from the next idle period
// on: a pooled session waits without one until a client adopts it.
func (s *Session) SetIdleTimeout(d time.Duration) {
	s.mu.Lock()
	s.opts.IdleTimeout = d
	s.mu.Unlock()
}

// Pin makes the session's sandbox, started now if it has none, its only
// one: once it is gone, calls fail with ErrPinnedGone saying why,
// instead of starting another (whose state a client would take for the
// old one's). It returns the sandbox's container ID and the engine it
// runs on ("" when the engine names none).
func (s *Session) Pin(ctx context.Context) (id, engineName string, err error) {
	ctr, release, err := s.live(ctx)
	if err != nil {
		return "", "", err
	}
	defer release()
	s.mu.Lock()
	s.pinned = true
	s.mu.Unlock()
	return ctr.sb.ID(), placedOn(ctr.sb), nil
}

// live holds the session (no call runs until release) and returns its
// live container, started when it has none.
func (s *Session) live(ctx context.Context) (ctr *container, release func(), err error) {
	if err := s.acquire(ctx); err != nil {
		return nil, nil, err
	}
	ctr, _, err = s.ensure(ctx)
	if err != nil {
		s.release()
		return nil, nil, err
	}
	return ctr, s.release, nil
}

// Ready reports whether the session has a live sandbox, started and not
// known to have died, so that its next call runs at once.
func (s *Session) Ready() bool {
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	return ctr != nil && ctr.Err() == nil
}

// python returns the sandbox interpreter's version, once started.
func (s *Session) python() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctr == nil {
		return ""
	}
	return s.ctr.python
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
	if !s.closed && s.ctr != nil && s.opts.idleTimeout() > 0 {
		ctr := s.ctr
		s.idle = time.AfterFunc(s.opts.idleTimeout(), func() { s.stopIdle(ctr) })
	}
	s.mu.Unlock()
	<-s.sem
}

// stopIdle stops ctr if it is still the session's and no call runs.
func (s *Session) stopIdle(ctr *container) {
	select {
	case s.sem <- struct{}{}:
	default:
		return // a call is running; release re-arms the timer
	}
	defer func() { <-s.sem }()
	s.mu.Lock()
	if s.ctr != ctr {
		s.mu.Unlock()
		return
	}
	s.ctr = nil
	s.mu.Unlock()
	if s.opts.Sleep != nil {
		if s.sleepIdle(ctr) {
			return
		}
		// Awake still: it stays, and is looked at again after another
		// idle period.
		s.mu.Lock()
		if !s.closed {
			s.ctr = ctr
			s.idle = time.AfterFunc(s.opts.idleTimeout(), func() { s.stopIdle(ctr) })
		}
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.lost = fmt.Sprintf("the sandbox was stopped after %v without calls", s.opts.idleTimeout())
	resumable := s.resume != nil
	s.mu.Unlock()
	if resumable {
		// Another bridge may have called it since: it ends itself when
		// idle; this one only lets it go, and attaches again if called.
		s.log.Info("detaching from the idle persistent sandbox", "idle", s.opts.idleTimeout())
		ctr.leave()
		return
	}
	s.log.Info("stopping idle sandbox", "idle", s.opts.idleTimeout())
	ctr.Close()
}

// ensure returns the live container, starting one when there is none or the
// previous one died; notice says why state was lost, if it was.
func (s *Session) ensure(ctx context.Context) (*container, string, error) {
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	if ctr != nil {
		err := ctr.Err()
		if err == nil {
			return ctr, "", nil
		}
		s.discard(ctr, err.Error())
	}
	s.mu.Lock()
	pinned, lost, resume := s.pinned, s.lost, s.resume
	s.mu.Unlock()
	if resume != nil {
		ctr, took, err := s.resumeOrWake(ctx, resume)
		switch {
		case err == nil:
			s.mu.Lock()
			s.ctr = ctr
			if took > 0 {
				s.woke = took
			}
			s.mu.Unlock()
			return ctr, "", nil
		case !pinned && s.ownsSleeper:
			// The session's own sandbox, persistent only to sleep: a
			// fresh one replaces it, and the call is told why.
			s.log.Warn("the sleeping sandbox cannot be woken; starting a fresh one", "err", err)
			s.removeSleeper(resume)
			s.mu.Lock()
			s.resume, s.ownsSleeper, s.asleep = nil, false, time.Time{}
			s.lost = "its sandbox had been put to sleep and could not be woken (" + err.Error() + ")"
			s.mu.Unlock()
		default:
			return nil, "", fmtGone(err)
		}
	}
	if pinned {
		return nil, "", fmt.Errorf("%w: %s", ErrPinnedGone, lost)
	}
	start := time.Now()
	opts := &s.opts
	if s.opts.Prepare != nil {
		o := s.opts
		o.Spec.Volumes = slices.Clone(o.Spec.Volumes)
		dirs, err := o.Prepare(ctx, &o.Spec)
		if err != nil {
			return nil, "", s.startError(err)
		}
		o.siteDirs = dirs
		opts = &o
	}
	var in *input
	if s.opts.InputDir != "" {
		scanned, err := scanInput(s.opts.InputDir, s.opts.inputMaxBytes(), s.log.Warn)
		if err != nil {
			return nil, "", s.startError(err)
		}
		in = scanned
		o := *opts
		o.Spec.InBytes = in.mountBytes()
		o.Spec.Input = in.writeTar
		opts = &o
	}
	ctr, err := startContainer(ctx, s.eng, opts, s.log)
	if err != nil {
		return nil, "", s.startError(err)
	}
	// An engine that took the input at start (Kubernetes) filled InDir
	// before the runtime ran; the others are given it now.
	if in != nil && !engine.InputFilled(ctr.sb) {
		began := time.Now()
		if err := copyInput(ctx, ctr.sb, in); err != nil {
			s.discard(ctr, err.Error())
			return nil, "", s.startError(err)
		}
		engine.TracePhase(ctx, PhaseInput, time.Since(began))
	}
	if s.opts.Init != nil {
		began := time.Now()
		if err := s.initialize(ctx, ctr); err != nil {
			s.discard(ctr, err.Error())
			return nil, "", s.startError(err)
		}
		engine.TracePhase(ctx, PhaseInit, time.Since(began))
	}
	placed := placedOn(ctr.sb)
	attrs := []any{"python", ctr.python, "runtime", ctr.version, "id", ctr.sb.ID(), "took", time.Since(start)}
	if placed != "" {
		attrs = append(attrs, "engine", placed)
	}
	s.log.Info("sandbox ready", attrs...)
	if in != nil {
		ctr.inputPrint = in.fingerprint()
	}
	s.mu.Lock()
	s.ctr = ctr
	notice := s.lost
	if notice != "" && placed != "" && s.placed != "" && placed != s.placed {
		notice += fmt.Sprintf("; the new sandbox runs on engine %s (the previous one ran on %s)", placed, s.placed)
	}
	s.lost = ""
	s.placed = placed
	s.mu.Unlock()
	return ctr, notice, nil
}

// placedOn names the engine sb runs on, when its engine is one of
// several (auto.Multi), else "".
func placedOn(sb engine.Sandbox) string {
	if p, ok := sb.(interface{ Engine() string }); ok {
		return p.Engine()
	}
	return ""
}

// startError wraps the failure to start a sandbox, saying why the previous
// one is gone when it was lost, so that the caller learns of the lost state
// now and not only from the notice of the next call that succeeds.
func (s *Session) startError(err error) error {
	s.mu.Lock()
	lost := s.lost
	s.mu.Unlock()
	if lost != "" {
		return fmt.Errorf("%w (the previous one and its state are gone: %s): %w", ErrStart, lost, err)
	}
	return fmt.Errorf("%w: %w", ErrStart, err)
}

// initialize runs the Init code in a new container.
func (s *Session) initialize(ctx context.Context, ctr *container) error {
	res, err := s.run(ctx, ctr, &Call{Code: s.opts.Init(), Timeout: s.opts.readyTimeout()})
	if err != nil {
		return fmt.Errorf("initializing the interpreter: %w", err)
	}
	if res.Status != StatusSuccess {
		return fmt.Errorf("initializing the interpreter: %s %s: %s\n%s", res.Status, res.ExceptionType, res.ExceptionMessage, res.Traceback)
	}
	return nil
}

// discard drops ctr (stopping it) and records why its state is
// gone.
func (s *Session) discard(ctr *container, why string) {
	s.discardWith(ctr, why, false)
}

// discardWith is discard; kill removes a persistent sandbox too, which
// discard otherwise only detaches from (its state may live on: the
// attachment broke, not the sandbox; once it has exited, the sweep of
// exited sandboxes removes it).
func (s *Session) discardWith(ctr *container, why string, kill bool) {
	s.mu.Lock()
	if s.ctr == ctr {
		s.ctr = nil
		s.lost = why
	}
	resume := s.resume
	s.mu.Unlock()
	s.discards.Add(1)
	go func() {
		defer s.discards.Done()
		switch {
		case resume == nil:
			ctr.Close()
		case kill:
			ctr.leave()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if engine.MayBe[engine.Resumer](s.eng) {
				if err := engine.RemoveSandbox(ctx, s.eng, resume.engine, resume.ref); err != nil {
					s.log.Warn("removing the persistent sandbox", "err", err)
				}
			}
		default:
			ctr.leave()
		}
	}()
}

// Execute runs code in the session's interpreter, stopping it after
// timeout (0: no limit). A timed-out call is interrupted first, so the
// session keeps its state; only when the code does not stop within the
// grace period is the container killed and replaced. The error is non-nil
// when the sandbox itself failed (engine, container death, protocol); the
// Result then carries what output arrived.
func (s *Session) Execute(ctx context.Context, code string, timeout time.Duration) (*Result, error) {
	return s.Run(ctx, &Call{Code: code, Timeout: timeout})
}

// Run is Execute with the call's own hooks: its output and its progress
// reports as they arrive.
func (s *Session) Run(ctx context.Context, call *Call) (*Result, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	s.mu.Lock()
	had := s.ctr
	s.mu.Unlock()
	ctr, notice, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if ctr == had && !ctr.served && !s.inputCurrent(ctr) {
		// Started ahead of its first call (a warm pool, a stdio
		// bridge's start), it holds an older copy of the input
		// directory: it held no state yet, so a fresh one replaces it
		// without a notice.
		s.log.Info("the input directory changed since the sandbox started; starting a fresh one before its first call")
		s.mu.Lock()
		if s.ctr == ctr {
			s.ctr = nil
		}
		s.mu.Unlock()
		s.discards.Add(1)
		go func() { defer s.discards.Done(); ctr.Close() }()
		if ctr, notice, err = s.ensure(ctx); err != nil {
			return nil, err
		}
	}
	ctr.served = true
	res, err := s.run(ctx, ctr, call)
	if errors.Is(err, ErrSandboxDied) && !res.began && ctx.Err() == nil {
		// The sandbox died before the code began: between calls, and
		// noticed only now (gVisor delivers a kill of its init after the
		// call that sent it has returned). None of the code ran, so it
		// runs on a fresh sandbox, whose notice says why the state is
		// gone.
		s.log.Info("the sandbox died before the call's code began; running it on a fresh sandbox", "err", err)
		if ctr, notice, err = s.ensure(ctx); err != nil {
			return nil, err
		}
		ctr.served = true
		res, err = s.run(ctx, ctr, call)
	}
	if notice != "" {
		res.StateLost = true
		res.Notice = "a new sandbox was started and earlier variables, imports and definitions are gone: " + notice
	}
	return res, err
}

// run performs one call on ctr.
func (s *Session) run(ctx context.Context, ctr *container, call *Call) (res *Result, err error) {
	c := &callState{
		id:         strconv.FormatInt(s.seq.Add(1), 10),
		result:     make(chan frame, 1),
		onOutput:   call.OnOutput,
		onProgress: call.OnProgress,
	}
	timeout := call.Timeout
	defer func() {
		if res != nil {
			res.began = c.started.Load()
			res.SandboxID = ctr.sb.ID()
		}
	}()
	c.stdout.max, c.stderr.max = s.opts.maxOutput(), s.opts.maxOutput()
	c.images.maxCount, c.images.maxBytes = s.opts.maxImages(), s.opts.maxImageBytes()
	c.ctx, c.cancel = context.WithCancel(ctr.ctx)
	defer c.cancel()
	began := time.Now()
	if err := s.settle(ctx, ctr); err != nil {
		if ctx.Err() != nil {
			return &Result{Status: StatusError}, ctx.Err()
		}
		return s.died(ctr, c, began, err)
	}
	ctr.mu.Lock()
	ctr.call = c
	ctr.mu.Unlock()
	exec := execFrame{
		T: frameExec, ID: c.id, Code: call.Code, MaxOutput: s.opts.maxOutput(), Progress: call.OnProgress != nil,
		MaxImages: c.images.maxCount, MaxImageBytes: c.images.maxBytes,
	}
	if err := ctr.send(exec); err != nil {
		return s.died(ctr, c, began, fmt.Errorf("%w: sending the code: %v", ErrSandboxDied, err))
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case f := <-c.result:
		switch f.T {
		case frameBusy:
			return &Result{Status: StatusError}, ErrBusy
		case frameLost:
			return c.lost(began, f), nil
		}
		return c.finish(f, false), nil
	case <-ctr.dead:
		return s.died(ctr, c, began, ctr.err)
	case <-deadline:
		return s.interrupt(ctr, c, began, fmt.Sprintf("the call ran past its timeout of %v", timeout))
	case <-ctx.Done():
		res, _ := s.interrupt(ctr, c, began, "the caller went away")
		return res, ctx.Err()
	}
}

// interrupt stops the running call: KeyboardInterrupt first, the
// container after the grace period.
func (s *Session) interrupt(ctr *container, c *callState, began time.Time, why string) (*Result, error) {
	if err := ctr.send(interruptFrame{T: frameInterrupt, ID: c.id}); err != nil {
		s.log.Debug("sending interrupt", "err", err)
	}
	grace := time.NewTimer(s.opts.interruptGrace())
	defer grace.Stop()
	select {
	case f := <-c.result:
		if f.T == frameLost {
			return c.lost(began, f), nil
		}
		if f.Status != statusInterrupt {
			return c.finish(f, false), nil // it ended on its own meanwhile
		}
		res := c.finish(f, true)
		res.Notice = why + "; it was interrupted and the session kept its state"
		return res, nil
	case <-ctr.dead:
		return s.died(ctr, c, began, ctr.err)
	case <-grace.C:
	}
	s.log.Warn("call did not stop after its interrupt; replacing the sandbox", "grace", s.opts.interruptGrace())
	reason := why + fmt.Sprintf(" and did not stop within %v of its interrupt, so its sandbox was killed", s.opts.interruptGrace())
	s.discardWith(ctr, reason, true)
	res := c.partial(began)
	res.Status = StatusTimeout
	res.StateLost = true
	res.Notice = reason + "; the next call starts a fresh interpreter and earlier variables, imports and definitions are gone"
	return res, nil
}

// died reports a call whose sandbox failed.
func (s *Session) died(ctr *container, c *callState, began time.Time, err error) (*Result, error) {
	s.discard(ctr, err.Error())
	res := c.partial(began)
	res.Status = StatusError
	res.StateLost = true
	res.Notice = err.Error()
	return res, err
}

// Close stops the sandbox and waits until its container is removed. A
// call in flight fails. Concurrent and later calls wait for the first.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		ctr := s.ctr
		s.ctr = nil
		if s.idle != nil {
			s.idle.Stop()
		}
		leave := s.leave || s.resume != nil
		remove := s.ownsSleeper && !s.leave
		resume := s.resume
		s.mu.Unlock()
		if ctr != nil && leave {
			s.closeErr = ctr.leave()
		} else if ctr != nil {
			s.closeErr = ctr.Close()
		}
		if remove {
			s.removeSleeper(resume)
		}
		s.discards.Wait()
	})
	return s.closeErr
}
