//go:build integration

package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkPoolFirstCall is item 12a: the first run_python of a new MCP
// session over HTTP, from two `serve` processes side by side in one run,
// one with a warm pool (MCP_BRIDGE_POOL_SIZE=2) and one without (0). One
// op is one session of each; before it, the pooled bridge has its two
// spares started again and the other has removed its last container.
// Connecting (initialize) is not timed, the first call is.
func BenchmarkPoolFirstCall(b *testing.B) {
	sec := report.section("12a", "Warm pool: the first `run_python` of a new HTTP session, with and without a pool",
		"variant", "sessions", "pool of 2: p50", "p95", "no pool: p50", "p95", "ratio (p50)")
	sec.note("Two `serve -http` processes of the same binary on the same engine, sessions alternating between them " +
		"(go-sdk `StreamableClientTransport`, `print(1)`). With a pool, the session's sandbox was started before the " +
		"session (container, interpreter, sandbox API); without, the call starts it. Each session is ended with DELETE; " +
		"the next one starts once the pool holds two spares again.")
	forEachVariant(b, func(b *testing.B, v variant) {
		e := connect(b, v.engine)
		env := []string{"MCP_BRIDGE_OCI_RUNTIME=" + v.oci} // INFO: the helper reads where it listens
		pooled := startHTTPBridge(b, e, httpOpts{env: append(env, "MCP_BRIDGE_POOL_SIZE=2")})
		cold := startHTTPBridge(b, e, httpOpts{env: append(env, "MCP_BRIDGE_POOL_SIZE=0")})
		first := func(br *httpBridge, spares int) time.Duration {
			b.StopTimer()
			waitFor(b, 2*time.Minute, "the pool's spares", func() bool { return len(br.containers(b)) == spares })
			cs := br.session(b, nil)
			b.StartTimer()
			took := timedCall(b, cs, map[string]any{"code": "print(1)"}, "1")
			b.StopTimer()
			cs.Close()
			b.StartTimer()
			return took
		}
		var warm, none []time.Duration
		for b.Loop() {
			warm = append(warm, first(pooled, 2))
			none = append(none, first(cold, 0))
		}
		w, n := summarize(warm), summarize(none)
		ratio := float64(n.p50) / float64(w.p50)
		b.ReportMetric(float64(w.p50.Microseconds())/1000, "pool-p50-ms")
		b.ReportMetric(float64(n.p50.Microseconds())/1000, "nopool-p50-ms")
		b.ReportMetric(ratio, "ratio")
		sec.row(v.label, v.label, strconv.Itoa(w.n), ms(w.p50), ms(w.p95), ms(n.p50), ms(n.p95), fmt.Sprintf("%.1f×", ratio))
		report.headline("new HTTP session's first call, pool vs none, "+v.label, "≥ 5× faster", fmt.Sprintf("%.1f×", ratio), ratio >= 5)
	})
}

// Shape of item 12b's load.
const (
	loadSessions = 30
	loadCalls    = 10
)

// BenchmarkHTTPLoad is item 12b: loadSessions concurrent MCP sessions on
// one `serve -http` process (loopback, defaults: a pool of 2), each making
// loadCalls calls one after the other. The first call of each session
// sets a variable to the session's number; every later call prints it, so
// each answer also checks that the session sees only its own state. One op
// is the whole load; then the memory of the bridge (RSS growth with the
// sessions open, per session) and of the sessions' containers (engine
// stats) is taken, every session is ended, and no container may remain
// beyond the pool's spares (and none after the process stops).
func BenchmarkHTTPLoad(b *testing.B) {
	sec := report.section("12b", fmt.Sprintf("HTTP load: %d concurrent sessions × %d calls on one bridge", loadSessions, loadCalls),
		"variant", "calls", "errors", "all: p50", "p99", "first calls: p50", "p99", "later calls: p50", "p99", "wall", "throughput", "bridge RSS / session", "container / session (median)")
	sec.note("Loopback, go-sdk clients, one goroutine per session; the calls of a session follow each other, the sessions run at once. " +
		"Latency per call from the client. A session's first call finds its sandbox started only for the 2 sessions the pool serves; " +
		"the other 28 start theirs at once, and those starts, queued on two cores, make the first calls' tail and most of the wall time. " +
		"Bridge RSS per session: VmRSS with every session open, less VmRSS before the first, over the sessions. " +
		"Container memory: the engine's stats (usage less inactive file cache) of each session's container, median. " +
		"gVisor is left out (two cores would measure its Sentry's start, not the bridge).")
	forEachVariant(b, func(b *testing.B, v variant) {
		if v.oci != "" {
			b.Skip("gVisor: see the note")
		}
		e := connect(b, v.engine)
		for b.Loop() {
			b.StopTimer()
			br := startHTTPBridge(b, e, httpOpts{env: []string{"MCP_BRIDGE_MAX_SESSIONS=64"}})
			waitFor(b, 2*time.Minute, "the pool's spares", func() bool { return len(br.containers(b)) == 2 })
			baseRSS := rssBytes(b, br.pid)
			var (
				mu        sync.Mutex
				latencies []time.Duration
				firsts    []time.Duration
				later     []time.Duration
				errs      []string
				sessions  []*mcp.ClientSession
				wg        sync.WaitGroup
			)
			fail := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, fmt.Sprintf(format, args...))
			}
			b.StartTimer()
			began := time.Now()
			for i := range loadSessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cs, err := br.dial("", nil)
					if err != nil {
						fail("session %d: connecting: %v", i, err)
						return
					}
					mu.Lock()
					sessions = append(sessions, cs)
					mu.Unlock()
					for c := range loadCalls {
						code, want := fmt.Sprintf("mine = %d\nprint(mine)", i), strconv.Itoa(i)
						if c > 0 {
							code = "print(mine)"
						}
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
						t0 := time.Now()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
						took := time.Since(t0)
						cancel()
						switch {
						case err != nil:
							fail("session %d call %d: %v", i, c, err)
							continue
						case res.IsError:
							fail("session %d call %d: error result %q", i, c, res.Content[0].(*mcp.TextContent).Text)
							continue
						}
						if got := strings.TrimSpace(res.Content[0].(*mcp.TextContent).Text); got != want {
							fail("session %d call %d: saw %q, its own state is %q", i, c, got, want)
						}
						mu.Lock()
						latencies = append(latencies, took)
						if c == 0 {
							firsts = append(firsts, took)
						} else {
							later = append(later, took)
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			wall := time.Since(began)
			b.StopTimer()
			rssPer := (rssBytes(b, br.pid) - baseRSS) / loadSessions
			var mems []int64
			for _, c := range br.containers(b) {
				mems = append(mems, containerMemoryOf(b, v.engine, c.ID))
			}
			for _, cs := range sessions {
				cs.Close()
			}
			waitFor(b, time.Minute, "the sessions' containers removed", func() bool { return len(br.containers(b)) <= 2 })
			st, fst, lst := summarize(latencies), summarize(firsts), summarize(later)
			throughput := float64(len(latencies)) / wall.Seconds()
			sec.row(v.label, v.label, strconv.Itoa(loadSessions*loadCalls), strconv.Itoa(len(errs)), ms(st.p50), ms(st.p99), ms(fst.p50), ms(fst.p99), ms(lst.p50), ms(lst.p99),
				wall.Round(time.Millisecond).String(), fmt.Sprintf("%.0f calls/s", throughput), mib(rssPer), mib(median(mems)))
			b.ReportMetric(throughput, "calls/s")
			b.ReportMetric(float64(st.p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lst.p99.Microseconds())/1000, "later-p99-ms")
			report.headline(fmt.Sprintf("HTTP load %d×%d, errors, %s", loadSessions, loadCalls, v.label), "0", strconv.Itoa(len(errs)), len(errs) == 0)
			if len(errs) > 0 {
				b.Fatalf("%d errors under load, first: %s", len(errs), errs[0])
			}
			br.cleanup() // SIGTERM; fails the benchmark if a container is left
			b.StartTimer()
		}
	})
}
