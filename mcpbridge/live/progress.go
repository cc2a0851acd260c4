package live

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// Bounds of the progress notifications of one call.
const (
	// progressInterval is the least time between two notifications: at
	// most ten a second, output arriving meanwhile is folded into the next.
	progressInterval = 100 * time.Millisecond
	// progressHeartbeat is the longest silence while the code runs: a
	// notification with the elapsed time is sent when nothing else was,
	// so clients that reset their timeout on progress keep a long call.
	progressHeartbeat = 3 * time.Second
	// ProgressLines and ProgressBytes bound the output a notification
	// carries: its newest lines, whichever bound is smaller.
	ProgressLines = 10
	ProgressBytes = 1 << 10
)

// A Sender sends one notifications/progress to the client
// (mcp.ServerSession.NotifyProgress).
type Sender func(ctx context.Context, p *mcp.ProgressNotificationParams) error

// A Reporter turns a call's output and the code's own reports
// (runtime.report_progress) into notifications/progress for a client that
// gave the call a progress token. Its hooks only record and wake its
// goroutine, so the session's reader never waits for the client.
//
// MCP requires progress to increase with every notification. A
// notification carries the code's newest figure when it reported one
// since the last notification; one that carries only output or a
// heartbeat repeats the last figure, raised by the smallest step a float64
// allows, so a client shows the code's own figure throughout.
type Reporter struct {
	ctx   context.Context // the call's: notifications are sent with it
	token any
	send  Sender
	began time.Time
	wake  chan struct{}
	stop  context.CancelFunc // ends run
	done  chan struct{}      // closed when run has returned

	mu     sync.Mutex
	tail   string               // the newest output, at most ProgressBytes
	fresh  bool                 // output arrived since the last notification
	report *entrypoint.Progress // the code's newest report, not yet sent
	pull   *engine.PullProgress // the newest report of an image pull the call waits for, not yet sent
	last   float64              // the progress of the last notification
	total  float64              // the code's latest total; 0: unknown
	sent   int                  // notifications sent
}

// StartReporter returns a reporter for the call of ctx whose request carried
// token, sending through send from now on: heartbeats, then the call's
// output and the code's reports as they come (Output, Progress). Stop
// ends it.
func StartReporter(ctx context.Context, token any, send Sender) *Reporter {
	r := newReporter(ctx, token, send)
	stop, cancel := context.WithCancel(ctx)
	r.stop, r.done = cancel, make(chan struct{})
	go func() { defer close(r.done); r.run(stop) }()
	return r
}

// Stop stops sending, once what is being sent went out, and sends the
// code's last report when it had not gone out yet.
func (r *Reporter) Stop() {
	r.stop()
	<-r.done
	r.finish()
}

// newReporter returns a reporter for the call of ctx whose request
// carried token, not yet sending.
func newReporter(ctx context.Context, token any, send Sender) *Reporter {
	return &Reporter{ctx: ctx, token: token, send: send, began: time.Now(), wake: make(chan struct{}, 1)}
}

// Output records a piece of the call's output (entrypoint.Call.OnOutput);
// it never blocks.
func (r *Reporter) Output(stream, data string) {
	if data == "" {
		return
	}
	r.mu.Lock()
	r.tail = KeepTail(r.tail+data, ProgressBytes)
	r.fresh = true
	r.mu.Unlock()
	r.poke()
}

// Progress records the code's report (entrypoint.Call.OnProgress); it
// never blocks.
func (r *Reporter) Progress(p entrypoint.Progress) {
	r.mu.Lock()
	r.report = &p
	r.mu.Unlock()
	r.poke()
}

// Pull records where the pull of the sandbox image the call waits for
// stands (an engine.PullWatcher); its next notification names the image
// and the layers and bytes so far, so that a client sees why the call
// takes long. It never blocks.
func (r *Reporter) Pull(p engine.PullProgress) {
	r.mu.Lock()
	r.pull = &p
	r.mu.Unlock()
	r.poke()
}

// poke wakes the goroutine, without waiting.
func (r *Reporter) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run sends notifications until stop ends: what was recorded, at most
// one per progressInterval, and a heartbeat after progressHeartbeat of
// silence. A notification being sent when stop ends is sent all the same
// (it may carry the code's last report); one that fails to send is
// dropped: the call goes on, and its result carries the whole output.
func (r *Reporter) run(stop context.Context) {
	var lastSent time.Time // zero: the first notification goes at once
	for {
		now := time.Now()
		r.mu.Lock()
		pending := r.fresh || r.report != nil || r.pull != nil
		r.mu.Unlock()
		quiet := now.Sub(r.began)
		if !lastSent.IsZero() {
			quiet = now.Sub(lastSent)
		}
		var wait time.Duration
		switch {
		case pending && quiet >= progressInterval || pending && lastSent.IsZero():
			r.notify(false)
			lastSent = time.Now()
			continue
		case pending:
			wait = progressInterval - quiet
		case quiet >= progressHeartbeat:
			r.notify(true)
			lastSent = time.Now()
			continue
		default:
			wait = progressHeartbeat - quiet
		}
		t := time.NewTimer(wait)
		select {
		case <-stop.Done():
			t.Stop()
			return
		case <-r.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// finish sends the code's last report when the call ended before it went
// out (the result carries the output, not the code's figures). Call it
// after run has returned.
func (r *Reporter) finish() {
	r.mu.Lock()
	pending := r.report != nil
	r.mu.Unlock()
	if pending {
		r.notify(false)
	}
}

// notify sends one notification of what was recorded, or a heartbeat.
func (r *Reporter) notify(heartbeat bool) {
	r.mu.Lock()
	p := &mcp.ProgressNotificationParams{ProgressToken: r.token}
	value := r.last
	if rep := r.report; rep != nil {
		value, r.total = rep.Progress, rep.Total
		p.Message = rep.Message
	}
	if r.sent > 0 && value <= r.last {
		value = math.Nextafter(r.last, math.Inf(1))
	}
	if p.Message == "" && r.pull != nil {
		p.Message = r.pull.String()
	}
	if p.Message == "" && r.fresh {
		p.Message = LastLines(r.tail, ProgressLines)
	}
	if p.Message == "" && heartbeat {
		p.Message = fmt.Sprintf("running for %s", time.Since(r.began).Round(time.Second))
	}
	p.Progress, p.Total = value, r.total
	r.last, r.report, r.pull, r.fresh = value, nil, nil, false
	r.sent++
	r.mu.Unlock()
	r.send(r.ctx, p)
}

// KeepTail returns the end of s, at most max bytes, starting on a
// character boundary.
func KeepTail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}

// LastLines returns the last n lines of s, without a final newline.
func LastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	i := len(s)
	for range n {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			return s
		}
		i = j
	}
	return s[i+1:]
}
