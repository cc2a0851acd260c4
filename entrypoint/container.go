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

// A container is one sandbox container with the runtime running in it,
// attached: its stdin and stdout carry the frames, its stderr the
// runtime's diagnostics.
type container struct {
	sb      engine.Sandbox
	log     *slog.Logger
	rpc     RPCHandler
	rpcSem  chan struct{}
	rpcHeld *sandboxBudget // the payload bytes its RPCs in flight hold
	python  string
	version string
	// inputPrint is the fingerprint of the input copied in ("": none);
	// served says a call ran in it (both guarded by the session's sem).
	inputPrint string
	served     bool
	// lastCall is when its last call ended, as its ready frame said
	// (Unix seconds; 0 when unknown): for a resumed sandbox, the time of
	// another bridge's call.
	lastCall float64
	// claims carries the answer to a sleep claim (sleep.go).
	claims chan bool

	wmu sync.Mutex // serializes frames to the sandbox
	// dmu serializes the dispatch of frames read from the stream and
	// from the lane.
	dmu sync.Mutex
	// link is the sandbox's fast lane (nil: none; guarded by wmu), and
	// linkP the same, read without wmu; declined is set when the host
	// gave a lane up before it carried anything.
	link     *laneLink
	linkP    atomic.Pointer[laneLink]
	declined atomic.Bool
	// reads are the reads of files out in flight over the lane.
	reads laneReads

	// egress carries the connections of the sandbox's proxy endpoint
	// (nil: no endpoint).
	egress *egress

	mu   sync.Mutex
	call *callState
	// abandoned is the id of a call cut off by lost streams whose result
	// has not come yet (""); resynced is closed (and interrupted set)
	// once the frames are whole again and it was interrupted, settled
	// when its result comes (resync.go).
	abandoned         string
	resynced, settled chan struct{}
	interrupted       bool

	ctx    context.Context // ends when the container dies; bounds RPC handlers
	cancel context.CancelFunc
	dead   chan struct{} // closed when err is set
	once   sync.Once
	err    error
	stderr *engine.LineTail
}

// startContainer starts a container, delivers the runtime and waits for ready.
func startContainer(ctx context.Context, eng engine.Engine, opts *Options, log *slog.Logger) (*container, error) {
	spec := opts.Spec
	spec.Cmd = command()
	link := openLane(opts.Lanes, &spec, log)
	sb, err := eng.Start(ctx, spec)
	if err != nil && link != nil && strings.Contains(err.Error(), link.lane.dir) {
		// The engine's host has no such directory: a bridge in a
		// container, say. The sandbox starts without a lane.
		opts.Lanes.learn("", fmt.Errorf("the engine cannot mount its directory: %w", err))
		link.lane.close()
		link, spec.Lane = nil, ""
		sb, err = eng.Start(ctx, spec)
	}
	if err != nil {
		if link != nil {
			link.lane.close()
		}
		return nil, err
	}
	started := time.Now()
	ctr := newContainer(sb, opts, log)
	ctr.link = link
	ctr.linkP.Store(link)
	go ctr.readStderr()
	ready := make(chan frame, 1)
	go ctr.readFrames(ready)
	go func() {
		_, err := sb.Stdin().Write(runtimePayload())
		if err != nil {
			// A runtime that exits before reading all of its source
			// breaks the pipe: its death report, which the frame reader
			// makes from its exit, says more than the broken pipe.
			t := time.NewTimer(5 * time.Second)
			defer t.Stop()
			select {
			case <-ctr.dead:
			case <-t.C:
			}
			ctr.fault(fmt.Errorf("delivering the runtime: %w", err))
		}
	}()
	return ctr.awaitReady(ctx, ready, opts, started)
}

// newContainer returns the container of sb, not yet read from.
func newContainer(sb engine.Sandbox, opts *Options, log *slog.Logger) *container {
	cctx, cancel := context.WithCancel(context.Background())
	ctr := &container{
		sb: sb, log: log, rpc: opts.RPC,
		rpcSem: make(chan struct{}, opts.maxRPCs()), rpcHeld: opts.RPCBudget.forSandbox(),
		ctx: cctx, cancel: cancel,
		dead:   make(chan struct{}),
		stderr: &engine.LineTail{Max: 20},
		claims: make(chan bool, 1),
	}
	if opts.Egress != nil {
		ctr.egress = &egress{ctr: ctr, handler: opts.Egress, install: opts.EgressInstall, conns: map[int64]*egressConn{}, severed: -1}
	}
	return ctr
}

// awaitReady waits for the runtime's ready frame, then starts its egress
// endpoint and adds its package directories; the container is closed
// when it fails.
func (ctr *container) awaitReady(ctx context.Context, ready <-chan frame, opts *Options, started time.Time) (*container, error) {
	timer := time.NewTimer(opts.readyTimeout())
	defer timer.Stop()
	select {
	case f := <-ready:
		if f.Protocol != protocolVersion {
			ctr.fault(fmt.Errorf("%w: runtime speaks protocol %d, want %d", errProtocol, f.Protocol, protocolVersion))
			return nil, ctr.closeWith(ctr.err)
		}
		ctr.python, ctr.version, ctr.lastCall = f.Python, f.Runtime, f.LastCall
		if ctr.egress != nil {
			if err := ctr.send(egressFrame{T: frameEgress, CA: string(opts.EgressCA)}); err != nil {
				return nil, ctr.closeWith(fmt.Errorf("starting the egress endpoint: %w", err))
			}
		}
		if len(opts.siteDirs) > 0 {
			if err := ctr.send(siteFrame{T: frameSite, Dirs: opts.siteDirs}); err != nil {
				return nil, ctr.closeWith(fmt.Errorf("adding the package directories: %w", err))
			}
		}
		if ctr.link != nil {
			ctr.offerLane(opts.Lanes)
		}
		traceReady(ctx, started, f)
		return ctr, nil
	case <-ctr.dead:
		return nil, ctr.closeWith(fmt.Errorf("starting the sandbox runtime: %w", ctr.err))
	case <-timer.C:
		ctr.fault(fmt.Errorf("the runtime was not ready within %v", opts.readyTimeout()))
		return nil, ctr.closeWith(fmt.Errorf("starting the sandbox runtime: %w", ctr.err))
	case <-ctx.Done():
		ctr.fault(ctx.Err())
		return nil, ctr.closeWith(ctx.Err())
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

// closeWith closes the container and returns err.
func (ctr *container) closeWith(err error) error {
	ctr.Close()
	return err
}

// fault records why the container is unusable (first reason wins) and wakes
// everything waiting on it. It does not stop the container.
func (ctr *container) fault(err error) {
	ctr.once.Do(func() {
		ctr.err = err
		ctr.cancel()
		close(ctr.dead)
	})
}

// Close stops and removes the container.
func (ctr *container) Close() error {
	ctr.fault(fmt.Errorf("%w: the sandbox was stopped", ErrSandboxDied))
	defer ctr.closeLane()
	return ctr.sb.Close()
}

// leave detaches from the container, leaving it running: a persistent
// sandbox waits for another bridge; another ends when its input does.
func (ctr *container) leave() error {
	ctr.fault(fmt.Errorf("%w: the bridge detached from the sandbox", ErrSandboxDied))
	ctr.closeLane()
	if d, ok := ctr.sb.(interface{ Detach() error }); ok {
		return d.Detach()
	}
	return ctr.sb.Close()
}

// Err returns why the container died, or nil while it lives.
func (ctr *container) Err() error {
	select {
	case <-ctr.dead:
		return ctr.err
	default:
		return nil
	}
}

// readFrames dispatches the sandbox's frames until its stdout ends.
func (ctr *container) readFrames(ready chan<- frame) {
	r := bufio.NewReaderSize(ctr.sb.Stdout(), 256<<10)
	readySeen := false
	for {
		line, err := readFrameLine(r, maxFrameBytes)
		if errors.Is(err, engine.ErrReattached) {
			err = ctr.resync(r)
			if err == nil {
				continue
			}
		}
		if err != nil {
			if errors.Is(err, errProtocol) {
				ctr.fault(err)
				ctr.sb.Close()
				return
			}
			ctr.fault(ctr.deathReport())
			return
		}
		f, err := parseFrame(line)
		if err == nil && f.NetLen > 0 {
			f.NetData = make([]byte, f.NetLen)
			_, rerr := io.ReadFull(r, f.NetData)
			if errors.Is(rerr, engine.ErrReattached) {
				if rerr = ctr.resync(r); rerr == nil {
					continue
				}
				if !errors.Is(rerr, errProtocol) {
					ctr.fault(ctr.deathReport())
					return
				}
			}
			if rerr != nil {
				ctr.fault(fmt.Errorf("%w: stream ended inside a %s frame's bytes", errProtocol, f.T))
				ctr.sb.Close()
				return
			}
			err = f.withPayload()
		}
		if err == nil && !readySeen && f.T != frameReady {
			err = fmt.Errorf("%w: %s frame before ready", errProtocol, f.T)
		}
		if err == nil && f.T == frameLane && f.Lane.Broke {
			// Not under dmu: it waits for the lane's reader to dispatch
			// what reached it.
			err = ctr.laneFellBack(f.Lane)
		} else if err == nil {
			ctr.dmu.Lock()
			err = ctr.dispatch(f, &readySeen, ready)
			ctr.dmu.Unlock()
		}
		if err != nil {
			ctr.log.Warn("sandbox protocol violation; stopping the sandbox", "err", err)
			ctr.fault(err)
			ctr.sb.Close()
			return
		}
	}
}

func (ctr *container) dispatch(f frame, readySeen *bool, ready chan<- frame) error {
	switch f.T {
	case frameStarted, frameOut, frameProgress, frameImage, frameFile, frameResult, frameBusy:
		if ctr.settleAbandoned(f) {
			return nil
		}
	}
	switch f.T {
	case frameReady:
		if *readySeen {
			return fmt.Errorf("%w: second ready frame", errProtocol)
		}
		*readySeen = true
		ready <- f
	case frameStarted:
		c := ctr.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: started frame for call %q, which is not running", errProtocol, f.ID)
		}
		c.started.Store(true)
	case frameOut:
		c := ctr.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: output for call %q, which is not running", errProtocol, f.ID)
		}
		c.output(f.Stream, f.Data)
	case frameProgress:
		c := ctr.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: progress for call %q, which is not running", errProtocol, f.ID)
		}
		if c.onProgress != nil {
			c.onProgress(f.Progress)
		}
	case frameImage:
		c := ctr.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: image for call %q, which is not running", errProtocol, f.ID)
		}
		c.images.add(f.Image)
	case frameFile:
		c := ctr.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: file for call %q, which is not running", errProtocol, f.ID)
		}
		c.inline.add(f.Path, f.FileData)
	case frameResult, frameBusy:
		c := ctr.current(f.ID)
		if c == nil {
			return fmt.Errorf("%w: %s for call %q, which is not running", errProtocol, f.T, f.ID)
		}
		ctr.mu.Lock()
		ctr.call = nil
		ctr.mu.Unlock()
		c.result <- f
	case frameRPC:
		select {
		case ctr.rpcSem <- struct{}{}:
		case <-ctr.dead:
			return nil
		}
		ctx := ctr.ctx
		ctr.mu.Lock()
		if ctr.call != nil {
			ctx = ctr.call.ctx
		}
		ctr.mu.Unlock()
		go ctr.serveRPC(ctx, f.RPCID, f.Payload)
	case frameNetOpen, frameNetData, frameNetClose, frameNetAck:
		return ctr.egress.dispatch(f)
	case frameLane:
		return ctr.laneAnswered(f)
	case frameReadData, frameReadEnd:
		ctr.readArrived(f)
	case frameNetFD:
		return ctr.netFD(f)
	case frameSleepClaimed:
		select {
		case ctr.claims <- f.Granted:
		default:
			return fmt.Errorf("%w: a sleep_claimed frame nobody asked for", errProtocol)
		}
	}
	return nil
}

// current returns the call in flight if its id is id.
func (ctr *container) current(id string) *callState {
	ctr.mu.Lock()
	defer ctr.mu.Unlock()
	if ctr.call == nil || ctr.call.id != id {
		return nil
	}
	return ctr.call
}

// serveRPC answers one RPC request (id, payload) through the handler,
// its payload counted in the sandbox's RPC budget meanwhile; nothing
// here holds the payload past the handler's use of it.
func (ctr *container) serveRPC(ctx context.Context, id int64, payload json.RawMessage) {
	defer func() { <-ctr.rpcSem }()
	reply := rpcResultFrame{T: frameRPCResult, ID: id}
	n := int64(len(payload))
	taken, budgetErr := ctr.rpcHeld.take(n)
	if taken {
		defer ctr.rpcHeld.give(n)
	}
	if budgetErr != nil {
		reply.Error = budgetErr.Error()
	} else if ctr.rpc == nil {
		reply.Error = "this sandbox has no RPC handler"
	} else if res, err := ctr.callHandler(ctx, payload); err != nil {
		reply.Error = err.Error()
	} else if raw, err := json.Marshal(res); err != nil {
		reply.Error = "encoding the RPC result: " + err.Error()
	} else if len(raw) > maxFrameBytes-1024 {
		reply.Error = fmt.Sprintf("the RPC result is %d bytes, over the %d-byte frame limit", len(raw), maxFrameBytes-1024)
	} else {
		reply.OK, reply.Result = true, raw
	}
	if err := ctr.send(reply); err != nil {
		ctr.log.Debug("answering an RPC", "id", id, "err", err)
	}
}

// callHandler runs the RPC handler, turning a panic into an error so a
// faulty handler cannot take the bridge down.
func (ctr *container) callHandler(ctx context.Context, payload json.RawMessage) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			ctr.log.Error("RPC handler panicked", "panic", p)
			err = fmt.Errorf("internal error in the RPC handler")
		}
	}()
	return ctr.rpc(ctx, payload)
}

// send writes one frame to the sandbox.
func (ctr *container) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) >= maxFrameBytes {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", len(data), maxFrameBytes)
	}
	return ctr.sendRaw(append(data, '\n'))
}

// sendData sends bytes of egress connection cid: a net_data frame, its
// line followed by the bytes themselves.
func (ctr *container) sendData(cid int64, b []byte) error {
	data := make([]byte, 0, len(b)+64)
	data = append(data, `{"t":"net_data","cid":`...)
	data = strconv.AppendInt(data, cid, 10)
	data = append(data, `,"len":`...)
	data = strconv.AppendInt(data, int64(len(b)), 10)
	data = append(data, "}\n"...)
	return ctr.sendRaw(append(data, b...))
}

// sendRaw writes data, whole frames (or blank lines), to the sandbox:
// on its lane while one is in use, else on the stream.
func (ctr *container) sendRaw(data []byte) error {
	ctr.wmu.Lock()
	defer ctr.wmu.Unlock()
	if err := ctr.Err(); err != nil {
		return err
	}
	if done, err := ctr.writeLane(data); done {
		return err
	}
	_, err := ctr.sb.Stdin().Write(data)
	return err
}

// readStderr logs the runtime's diagnostics and keeps the last lines.
func (ctr *container) readStderr() {
	w := &engine.LineLogger{Log: ctr.log, Level: slog.LevelDebug, Msg: "sandbox stderr", Tail: ctr.stderr}
	io.Copy(w, ctr.sb.Stderr())
	w.Flush()
}

// deathReport waits briefly for the container's exit status and says why
// it ended.
func (ctr *container) deathReport() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := ctr.sb.Wait(ctx)
	tail := ""
	if t := ctr.stderr.String(); t != "" {
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
