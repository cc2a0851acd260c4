package entrypoint

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// ErrSandboxDied reports that the sandbox container ended or broke during a
// call; the error says why (OOM-killed, exit code, protocol violation).
var ErrSandboxDied = errors.New("sandbox died")

// A runtimeBox is one sandbox container with the runtime running in it.
type runtimeBox struct {
	sb      engine.Sandbox
	log     *slog.Logger
	rpc     RPCHandler
	rpcSem  chan struct{}
	python  string
	version string

	wmu sync.Mutex // serializes frames to stdin

	mu   sync.Mutex
	call *callState

	ctx    context.Context // ends when the box dies; bounds RPC handlers
	cancel context.CancelFunc
	dead   chan struct{} // closed when deadErr is set
	once   sync.Once
	err    error
	stderr *engine.LineTail
}

// startBox starts a container, delivers the runtime and waits for ready.
func startBox(ctx context.Context, eng engine.Engine, opts *Options, log *slog.Logger) (*runtimeBox, error) {
	spec := opts.Spec
	spec.Cmd = Command()
	sb, err := eng.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	bctx, cancel := context.WithCancel(context.Background())
	b := &runtimeBox{
		sb: sb, log: log, rpc: opts.RPC,
		rpcSem: make(chan struct{}, opts.maxRPCs()),
		ctx:    bctx, cancel: cancel,
		dead:   make(chan struct{}),
		stderr: &engine.LineTail{Max: 20},
	}
	go b.readStderr()
	ready := make(chan frame, 1)
	go b.readFrames(ready)
	go func() {
		_, err := sb.Stdin().Write(runtimePayload())
		if err != nil {
			b.fault(fmt.Errorf("delivering the runtime: %w", err))
		}
	}()
	timer := time.NewTimer(opts.readyTimeout())
	defer timer.Stop()
	select {
	case f := <-ready:
		if f.Protocol != Protocol {
			b.fault(fmt.Errorf("%w: runtime speaks protocol %d, want %d", ErrProtocol, f.Protocol, Protocol))
			return nil, b.closeWith(b.err)
		}
		b.python, b.version = f.Python, f.Runtime
		traceReady(ctx, started, f)
		return b, nil
	case <-b.dead:
		return nil, b.closeWith(fmt.Errorf("starting the sandbox runtime: %w", b.err))
	case <-timer.C:
		b.fault(fmt.Errorf("the runtime was not ready within %v", opts.readyTimeout()))
		return nil, b.closeWith(fmt.Errorf("starting the sandbox runtime: %w", b.err))
	case <-ctx.Done():
		b.fault(ctx.Err())
		return nil, b.closeWith(ctx.Err())
	}
}

// traceReady reports the phases between the container's start and its
// ready frame, split with the sandbox's clock when the frame carries it
// (the container shares the host's wall clock under runc; under a
// different kernel, implausible times fall back to one phase).
func traceReady(ctx context.Context, started time.Time, f frame) {
	now := time.Now()
	total := now.Sub(started)
	at := func(unix float64) time.Time { return time.Unix(0, int64(unix*1e9)) }
	boot, sent := at(f.Boot), at(f.Sent)
	if f.Boot <= 0 || f.Sent < f.Boot || boot.Before(started.Add(-time.Second)) || sent.After(now.Add(time.Second)) {
		engine.TracePhase(ctx, PhaseReady, total)
		return
	}
	interp := max(boot.Sub(started), 0)
	run := min(sent.Sub(boot), total-interp)
	engine.TracePhase(ctx, PhaseInterpreter, interp)
	engine.TracePhase(ctx, PhaseRuntime, run)
	engine.TracePhase(ctx, PhaseReady, max(total-interp-run, 0))
}

// closeWith closes the box and returns err.
func (b *runtimeBox) closeWith(err error) error {
	b.Close()
	return err
}

// fault records why the box is unusable (first reason wins) and wakes
// everything waiting on it. It does not stop the container.
func (b *runtimeBox) fault(err error) {
	b.once.Do(func() {
		b.err = err
		b.cancel()
		close(b.dead)
	})
}

// Close stops and removes the container.
func (b *runtimeBox) Close() error {
	b.fault(fmt.Errorf("%w: the sandbox was stopped", ErrSandboxDied))
	return b.sb.Close()
}

// Err returns why the box died, or nil while it lives.
func (b *runtimeBox) Err() error {
	select {
	case <-b.dead:
		return b.err
	default:
		return nil
	}
}

// readFrames dispatches the sandbox's frames until its stdout ends.
func (b *runtimeBox) readFrames(ready chan<- frame) {
	r := bufio.NewReaderSize(b.sb.Stdout(), 64<<10)
	readySeen := false
	for {
		line, err := readFrameLine(r, MaxFrameBytes)
		if err != nil {
			if errors.Is(err, ErrProtocol) {
				b.fault(err)
				b.sb.Close()
				return
			}
			b.fault(b.deathReport())
			return
		}
		f, err := parseFrame(line)
		if err == nil && !readySeen && f.T != frameReady {
			err = fmt.Errorf("%w: %s frame before ready", ErrProtocol, f.T)
		}
		if err == nil {
			err = b.dispatch(f, &readySeen, ready)
		}
		if err != nil {
			b.log.Warn("sandbox protocol violation; stopping the sandbox", "err", err)
			b.fault(err)
			b.sb.Close()
			return
		}
	}
}

func (b *runtimeBox) dispatch(f frame, readySeen *bool, ready chan<- frame) error {
	switch f.T {
	case frameReady:
		if *readySeen {
			return fmt.Errorf("%w: second ready frame", ErrProtocol)
		}
		*readySeen = true
		ready <- f
	case frameStarted:
		c := b.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: started frame for call %q, which is not running", ErrProtocol, f.ID)
		}
		c.started.Store(true)
	case frameOut:
		c := b.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: output for call %q, which is not running", ErrProtocol, f.ID)
		}
		c.output(f.Stream, f.Data)
	case frameResult:
		c := b.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: result for call %q, which is not running", ErrProtocol, f.ID)
		}
		b.mu.Lock()
		b.call = nil
		b.mu.Unlock()
		c.result <- f
	case frameRPC:
		select {
		case b.rpcSem <- struct{}{}:
		case <-b.dead:
			return nil
		}
		ctx := b.ctx
		b.mu.Lock()
		if b.call != nil {
			ctx = b.call.ctx
		}
		b.mu.Unlock()
		go b.serveRPC(ctx, f)
	}
	return nil
}

// current returns the call in flight if its id is id.
func (b *runtimeBox) current(id string) *callState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.call == nil || b.call.id != id {
		return nil
	}
	return b.call
}

// serveRPC answers one RPC request through the handler.
func (b *runtimeBox) serveRPC(ctx context.Context, f frame) {
	defer func() { <-b.rpcSem }()
	reply := rpcResultFrame{T: frameRPCResult, ID: f.RPCID}
	if b.rpc == nil {
		reply.Error = "this sandbox has no RPC handler"
	} else if res, err := b.callHandler(ctx, f.Payload); err != nil {
		reply.Error = err.Error()
	} else if raw, err := json.Marshal(res); err != nil {
		reply.Error = "encoding the RPC result: " + err.Error()
	} else if len(raw) > MaxFrameBytes-1024 {
		reply.Error = fmt.Sprintf("the RPC result is %d bytes, over the %d-byte frame limit", len(raw), MaxFrameBytes-1024)
	} else {
		reply.OK, reply.Result = true, raw
	}
	if err := b.send(reply); err != nil {
		b.log.Debug("answering an RPC", "id", f.RPCID, "err", err)
	}
}

// callHandler runs the RPC handler, turning a panic into an error so a
// faulty handler cannot take the bridge down.
func (b *runtimeBox) callHandler(ctx context.Context, payload json.RawMessage) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			b.log.Error("RPC handler panicked", "panic", p)
			err = fmt.Errorf("internal error in the RPC handler")
		}
	}()
	return b.rpc(ctx, payload)
}

// send writes one frame to the sandbox.
func (b *runtimeBox) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) >= MaxFrameBytes {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", len(data), MaxFrameBytes)
	}
	data = append(data, '\n')
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if err := b.Err(); err != nil {
		return err
	}
	_, err = b.sb.Stdin().Write(data)
	return err
}

// readStderr logs the runtime's diagnostics and keeps the last lines.
func (b *runtimeBox) readStderr() {
	sc := bufio.NewScanner(b.sb.Stderr())
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		b.stderr.Add(line)
		b.log.Debug("sandbox stderr", "line", line)
	}
	io.Copy(io.Discard, b.sb.Stderr())
}

// deathReport waits briefly for the container's exit status and says why
// it ended.
func (b *runtimeBox) deathReport() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := b.sb.Wait(ctx)
	tail := ""
	if t := b.stderr.String(); t != "" {
		tail = "; last stderr: " + t
	}
	if err != nil {
		return fmt.Errorf("%w: its output stream ended (%v)%s", ErrSandboxDied, err, tail)
	}
	exit := st.Err()
	if exit == nil {
		exit = errors.New("sandbox container exited with code 0")
	}
	return fmt.Errorf("%w: %w%s", ErrSandboxDied, exit, tail)
}

// A callState collects one call's output and awaits its result.
type callState struct {
	id string
	// ctx ends with the call: RPCs it made that are still in flight are
	// cancelled (a proxied server that hangs does not outlive the call).
	ctx            context.Context
	cancel         context.CancelFunc
	stdout, stderr capBuffer
	result         chan frame
	onOutput       func(stream, data string)
	// started is set when the sandbox said the code is about to run;
	// until then none of it ran.
	started atomic.Bool
}

func (c *callState) output(stream, data string) {
	buf := &c.stderr
	if stream == "stdout" {
		buf = &c.stdout
	}
	if kept := buf.write(data); kept != "" && c.onOutput != nil {
		c.onOutput(stream, kept)
	}
}

// A capBuffer keeps at most max bytes of text (0: no limit) and counts the
// rest.
type capBuffer struct {
	max     int
	b       strings.Builder
	dropped int64
}

// write appends what fits of s and returns that part.
func (c *capBuffer) write(s string) string {
	if c.max > 0 && c.b.Len()+len(s) > c.max {
		cut := c.max - c.b.Len()
		for cut > 0 && cut < len(s) && !utf8Start(s[cut]) {
			cut--
		}
		c.dropped += int64(len(s) - cut)
		s = s[:cut]
	}
	c.b.WriteString(s)
	return s
}

// text returns the kept text, with a marker when bytes were dropped here
// or (extra) in the sandbox.
func (c *capBuffer) text(extra int64) (string, bool) {
	n := c.dropped + extra
	if n == 0 {
		return c.b.String(), false
	}
	s := c.b.String()
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + "[output truncated: " + strconv.FormatInt(n, 10) + " more bytes not shown]\n", true
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
