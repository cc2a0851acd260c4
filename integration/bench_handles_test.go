//go:build integration

package integration

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Shape of item 16: per op, handlesPerOp new handles, each followed by
// sameReplicaCalls calls on the replica that minted it, one on the other
// replica (its first: it attaches) and alternatingCalls calls alternating
// between the two.
const (
	handlesPerOp     = 8
	sameReplicaCalls = 5
	alternatingCalls = 6
)

// BenchmarkHandles is item 16: calls through sandbox handles (protocol
// 2026-07-28) on two `serve -http` replicas sharing MCP_BRIDGE_HANDLE_KEY,
// go-sdk clients straight to each replica (no balancer: its hop is not
// the bridge's). A new handle's first call takes a sandbox of the
// replica's warm pool (MCP_BRIDGE_POOL_SIZE=2, refilled before each, not
// timed); a call on the same replica drives the sandbox it holds; a
// resume on the other replica attaches to the sandbox (a relay run with
// exec) and takes it over; calls alternating between the replicas, both
// attached, hand the sandbox over at each call.
func BenchmarkHandles(b *testing.B) {
	sec := report.section("16", "Sandbox handles across replicas: a new handle, the same replica, a resume on another",
		"variant", "new handle (pool): p50", "p99", "same replica: p50", "p99", "resume elsewhere (attach): p50", "p99",
		"alternating replicas: p50", "p99", "2025 session, same replica: p50", "p99")
	sec.note("Two replicas of one binary sharing the handle key, go-sdk clients on protocol 2026-07-28 straight to each "+
		"(`print(x)`). Per op %d new handles; after each, %d calls on the same replica, one on the other (its first: attach), "+
		"%d alternating between them (each hands the sandbox over). The last columns: a 2025-11-25 session of the same client library on the same replica, in the same run, for comparison.", handlesPerOp, sameReplicaCalls, alternatingCalls)
	forEachVariant(b, func(b *testing.B, v variant) {
		e := connect(b, v.engine)
		key, token := rand.Text()+rand.Text(), rand.Text()
		env := func(name string) httpOpts {
			return replicaEnv(key, token, name, "MCP_BRIDGE_POOL_SIZE=2", "MCP_BRIDGE_OCI_RUNTIME="+v.oci)
		}
		r1, r2 := startHTTPBridge(b, e, env("r1")), startHTTPBridge(b, e, env("r2"))
		removeResumable(b, e, r1, r2)
		c1, c2 := r1.dialStateless(b, r1.url), r2.dialStateless(b, r2.url)
		old := r1.session(b, nil)
		timedCall(b, old, map[string]any{"code": "x = 1"}, "")
		minted := 1 // the session's sandbox, taken from the pool
		var first, same, resume, alt, sess []time.Duration
		for b.Loop() {
			for range handlesPerOp {
				b.StopTimer()
				waitFor(b, 2*time.Minute, "the pool's spares", func() bool { return running(b, e, r1.pid) == minted+2 })
				b.StartTimer()
				began := time.Now()
				text, isErr, h := runIn(b, c1, "", "x = 1\nprint(x)", 30)
				first = append(first, time.Since(began))
				if isErr || h == "" {
					b.Fatalf("a new handle: %q", text)
				}
				minted++
				for range sameReplicaCalls {
					same = append(same, timedCall(b, c1, map[string]any{"code": "print(x)", "session": h}, "1"))
					sess = append(sess, timedCall(b, old, map[string]any{"code": "print(x)"}, "1"))
				}
				resume = append(resume, timedCall(b, c2, map[string]any{"code": "print(x)", "session": h}, "1"))
				for i := range alternatingCalls {
					c := c1
					if i%2 == 1 {
						c = c2
					}
					alt = append(alt, timedCall(b, c, map[string]any{"code": "print(x)", "session": h}, "1"))
				}
			}
		}
		f, s, r, a, o := summarize(first), summarize(same), summarize(resume), summarize(alt), summarize(sess)
		b.ReportMetric(float64(s.p50.Microseconds())/1000, "same-p50-ms")
		b.ReportMetric(float64(r.p50.Microseconds())/1000, "resume-p50-ms")
		sec.row(v.label, v.label, ms(f.p50), ms(f.p99), ms(s.p50), ms(s.p99), ms(r.p50), ms(r.p99), ms(a.p50), ms(a.p99), ms(o.p50), ms(o.p99))
	})
}

// running counts the running containers the bridge process pid owns.
func running(t testing.TB, e testEngine, pid int) int {
	n := 0
	for _, c := range containersOf(t, e, pid) {
		if c.State == "running" && c.Labels[engine.LabelResumable] != "" {
			n++
		}
	}
	return n
}
