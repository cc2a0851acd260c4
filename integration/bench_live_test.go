//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The live side of a call: progress notifications while it runs (item 9)
// and its cancellation (item 10). Both compare a time taken in the sandbox
// (Python's time.time_ns) with one taken in this process (time.Now): the
// container reads the host's CLOCK_REALTIME (same kernel; gVisor's Sentry
// keeps its clock from the host's), and clockOffset checks that on every
// client before it is relied on.

// liveBridge starts the built binary on engine name with env, like
// connectBridge, but with a client of its own options (a progress handler).
func liveBridge(t testing.TB, name string, opts *mcp.ClientOptions, env ...string) *mcp.ClientSession {
	t.Helper()
	cs, _, _ := launchBridge(t, append([]string{"MCP_BRIDGE_RUNTIME=" + name, "MCP_BRIDGE_LOG_LEVEL=WARN"}, env...), nil, opts)
	return cs
}

// sandboxNanos runs code that prints one integer on cs and returns it.
func sandboxNanos(t testing.TB, cs *mcp.ClientSession, code string) int64 {
	t.Helper()
	text, isErr := runPython(t, cs, map[string]any{"code": code})
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if isErr || err != nil {
		t.Fatalf("%s: %q (isError %v)", code, text, isErr)
	}
	return n
}

// clockOffset bounds the sandbox's clock against this process's: each of
// 5 calls prints the sandbox's time.time_ns(), which was read between the
// host's times before and after the call, so sandbox − host lies in
// [printed − after, printed − before]; the bounds are those intervals'
// intersection (lo > hi: no constant offset explains them).
func clockOffset(t testing.TB, cs *mcp.ClientSession) (lo, hi time.Duration) {
	t.Helper()
	for i := range 5 {
		before := time.Now().UnixNano()
		at := sandboxNanos(t, cs, "import time\nprint(time.time_ns())")
		after := time.Now().UnixNano()
		l, h := time.Duration(at-after), time.Duration(at-before)
		if i == 0 {
			lo, hi = l, h
		}
		lo, hi = max(lo, l), min(hi, h)
	}
	return lo, hi
}

// offsetCell describes clockOffset's bounds for the report.
func offsetCell(lo, hi time.Duration) string {
	signed := func(d time.Duration) string {
		return fmt.Sprintf("%+.2f", float64(d)/float64(time.Millisecond))
	}
	switch {
	case lo > hi:
		return fmt.Sprintf("**inconsistent** ([%s, %s] ms)", signed(lo), signed(hi))
	case lo > 0 || hi < 0:
		return fmt.Sprintf("**clocks differ**: [%s, %s] ms", signed(lo), signed(hi))
	}
	return fmt.Sprintf("[%s, %s] ms", signed(lo), signed(hi))
}

// An arrival is one notifications/progress as the client received it.
type arrival struct {
	token   string
	message string
	at      time.Time
}

// progressCode prints the sandbox's clock, then keeps the call running
// long enough for the notification to arrive before the result.
const progressCode = "import time\nprint('tick', time.time_ns(), flush=True)\ntime.sleep(0.3)"

// tickOf returns the time of the "tick N" line of a notification's message.
func tickOf(message string) (int64, bool) {
	for line := range strings.SplitSeq(message, "\n") {
		if rest, ok := strings.CutPrefix(line, "tick "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// BenchmarkProgress is item 9: how soon a line the code prints reaches
// the client as notifications/progress. One op is one run_python call with
// a progress token whose code prints `tick <time.time_ns()>` and sleeps
// 0.3 s; its sample is the client's clock when the notification carrying
// that line arrived minus the printed time.
func BenchmarkProgress(b *testing.B) {
	sec := report.section("9", "Progress: a `print` in the sandbox → its `notifications/progress` at the client",
		"variant", "calls", "p50", "p95", "mean", "sandbox clock − host clock")
	sec.note("One call per sample, with `_meta.progressToken`, of `print('tick', time.time_ns(), flush=True); time.sleep(0.3)`; " +
		"the sample is the client's `time.Now()` when the `notifications/progress` whose message carries that line reaches its " +
		"`ProgressNotificationHandler`, minus the printed time: sandbox write → runtime's pump → output frame → bridge → " +
		"progress reporter (the first notification of a call goes at once, later ones at most ten a second) → stdio → go-sdk client. " +
		"Both ends read the same CLOCK_REALTIME; the last column bounds their offset from 5 calls each printing `time.time_ns()`, " +
		"compared with the host's clock before and after the call (an interval holding 0: no offset seen; its width is that of the " +
		"shortest of those calls, not the clocks' real offset). After 5 warm-up calls.")
	forEachVariant(b, func(b *testing.B, v variant) {
		arrivals := make(chan arrival, 256)
		cs := liveBridge(b, v.engine, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				at := time.Now()
				select {
				case arrivals <- arrival{fmt.Sprint(req.Params.ProgressToken), req.Params.Message, at}:
				default: // a flood would be a bug of the bridge; the sample then fails
				}
			},
		}, v.env()...)
		lo, hi := clockOffset(b, cs)
		seq := 0
		sample := func() time.Duration {
			seq++
			token := fmt.Sprintf("bench-progress-%d", seq)
			params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": progressCode}}
			params.SetProgressToken(token)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				b.Fatal(err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, "tick ") {
				b.Fatalf("progress call: %q (isError %v)", text, res.IsError)
			}
			wait := time.NewTimer(2 * time.Second) // one sent just before the result may trail it
			defer wait.Stop()
			for {
				select {
				case a := <-arrivals:
					if a.token != token {
						continue // an earlier call's later notification
					}
					if tick, ok := tickOf(a.message); ok {
						return a.at.Sub(time.Unix(0, tick))
					}
				case <-wait.C:
					b.Fatalf("call %s: no notifications/progress carrying its tick line", token)
				}
			}
		}
		st := loopSamples(b, 5, sample)
		sec.row(v.label, v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean), offsetCell(lo, hi))
		if v.oci == "" {
			report.headline("print → progress notification p50, "+v.label, "≤ 200 ms", ms(st.p50), st.p50 <= 200*time.Millisecond)
		}
	})
}

// cancelStamp, run once per client, defines the loops item 10 cancels,
// each in a function of its own, and _bench_run, which runs one and
// records when its KeyboardInterrupt came out of it before letting it go
// on. The record is in the caller's frame: CPython 3.11 skips the handler
// of a try around a bare busy loop for an interrupt raised in it.
const cancelStamp = `import time
def _bench_sleep():
    while True:
        time.sleep(0.01)
def _bench_busy():
    while True:
        pass
def _bench_run(loop):
    global _bench_interrupted_at
    _bench_interrupted_at = None
    try:
        loop()
    except KeyboardInterrupt:
        _bench_interrupted_at = time.time_ns()
        raise`

// cancelLoops are the loops item 10 cancels: name, as the report shows
// it, and its function in cancelStamp.
var cancelLoops = []struct{ name, label, fn string }{
	{"sleep", "`while True: time.sleep(0.01)`", "_bench_sleep"},
	{"busy", "`while True: pass`", "_bench_busy"},
}

// BenchmarkCancel is item 10: a run_python call cancelled by its client.
// One op starts a call of a loop that never ends, waits 200 ms, cancels
// the CallTool context (go-sdk: notifications/cancelled, and CallTool
// returns at once) and makes the next call at once, `print` of the time
// the sandbox saw the KeyboardInterrupt; the session runs one call at a
// time, so that call waits for the interrupted one to end. Then one warm
// call on the same client, the baseline. Its ns/op is the whole op.
func BenchmarkCancel(b *testing.B) {
	sec := report.section("10", "Cancel: a cancelled `run_python` → its code interrupted, the session answering again",
		"variant", "loop", "cancels", "cancel → KeyboardInterrupt in the code (p50 / p95)",
		"cancel → next call's answer (p50 / p95)", "warm call, same client (p50)", "cancel → interrupted, estimate (p50)")
	sec.note("One sample: start a call of the loop, wait 200 ms, cancel its context (t0; the go-sdk client sends " +
		"`notifications/cancelled` and `CallTool` returns at once), then at once call `print(_bench_interrupted_at)`, " +
		"the sandbox's `time.time_ns()` when the KeyboardInterrupt came out of the loop's function (its caller records it " +
		"and re-raises it), then one warm `print(1)` call. **In the code**: that time − t0 (the host's and " +
		"the sandbox's CLOCK_REALTIME, offset bounded as in item 9): cancel → bridge → session → interrupt frame → runtime → " +
		"SIGINT → KeyboardInterrupt. **Next call's answer** − t0: the interrupted call's end (result frame, the session freed) " +
		"plus one whole warm call, an upper bound of cancel → interrupted. **Estimate**: the next call's p50 − the warm call's " +
		"p50 on the same client, the goal's figure. After 2 warm-up samples.")
	for _, loop := range cancelLoops {
		b.Run(loop.name, func(b *testing.B) {
			forEachVariant(b, func(b *testing.B, v variant) {
				cs := connectBridge(b, v.engine, v.env()...)
				if text, isErr := runPython(b, cs, map[string]any{"code": cancelStamp}); isErr {
					b.Fatalf("defining the loops: %q", text)
				}
				lo, hi := clockOffset(b, cs)
				code := "_bench_run(" + loop.fn + ")"
				var inCode, next, warm []time.Duration
				sample := func() {
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() {
						_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
						done <- err
					}()
					time.Sleep(200 * time.Millisecond)
					t0 := time.Now()
					cancel()
					if err := <-done; !errors.Is(err, context.Canceled) {
						b.Fatalf("the cancelled call returned %v, not context.Canceled", err)
					}
					at := sandboxNanos(b, cs, "print(_bench_interrupted_at)")
					next = append(next, time.Since(t0))
					inCode = append(inCode, time.Unix(0, at).Sub(t0))
					warm = append(warm, timedCall(b, cs, map[string]any{"code": "print(1)"}, "1"))
				}
				for range 2 {
					sample()
				}
				inCode, next, warm = nil, nil, nil
				for b.Loop() {
					sample()
				}
				in, nx, wm := summarize(inCode), summarize(next), summarize(warm)
				est := nx.p50 - wm.p50
				b.ReportMetric(float64(est)/float64(time.Millisecond), "p50-ms")
				b.ReportMetric(float64(in.p50)/float64(time.Millisecond), "in-code-p50-ms")
				b.ReportMetric(float64(nx.p50)/float64(time.Millisecond), "next-p50-ms")
				label := v.label
				if lo > hi || lo > 0 || hi < 0 {
					label += " (clock offset " + offsetCell(lo, hi) + ")"
				}
				sec.row(v.label+"/"+loop.name, label, loop.label, fmt.Sprint(nx.n), ms(in.p50)+" / "+ms(in.p95),
					ms(nx.p50)+" / "+ms(nx.p95), ms(wm.p50), ms(est))
				if v.oci == "" {
					report.headline("cancel → interrupted p50 (estimate), "+v.label+", "+loop.name+" loop", "≤ 100 ms",
						fmt.Sprintf("%s (in the code: %s)", ms(est), ms(in.p50)), est <= 100*time.Millisecond)
				}
			})
		})
	}
}
