//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// startPhases are the phases of a sandbox start, in order, as the bridge
// logs them ("sandbox started").
var startPhases = []string{engine.PhaseConnect, engine.PhaseImage, engine.PhaseCreate, engine.PhaseCheck, engine.PhaseAttach,
	engine.PhaseStart, engine.PhaseWatch, entrypoint.PhaseInterpreter, entrypoint.PhaseRuntime,
	entrypoint.PhaseReady, entrypoint.PhaseInit}

var logDuration = regexp.MustCompile(`\b([a-z]+)=([0-9.]+(?:ns|µs|us|ms|s))\b`)

// lockedBuffer is a bytes.Buffer safe for the bridge's stderr copier.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tail returns the last n bytes written.
func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// loggedPhases reads the phases of the "sandbox started" line of a
// bridge's log.
func loggedPhases(log string) map[string]time.Duration {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `msg="sandbox started"`) {
			continue
		}
		out := map[string]time.Duration{}
		for _, m := range logDuration.FindAllStringSubmatch(sc.Text(), -1) {
			if d, err := time.ParseDuration(m[2]); err == nil {
				out[m[1]] = d
			}
		}
		return out
	}
	return nil
}

// BenchmarkNewSession is item 4: the first call of a new client, image
// cached, no pool, and where its time goes as the bridge logs it. One op
// is one new session's first call; the bridge's start before it and its
// stop after it (container removed) run with the timer stopped.
func BenchmarkNewSession(b *testing.B) {
	sec := report.section("4", "New session: the first `run_python` of a new client (image cached, no pool)",
		append([]string{"variant", "sessions", "first call p50", "p95"}, startPhases...)...)
	sec.note("Phases (p50 of each, from the bridge's `sandbox started` log line, `engine.StartTrace`): " +
		"`image` image lookup (cached), `create` container create, `check` inspect to verify the OCI runtime (Podman, when one is asked for), " +
		"`attach` stream attach, `start` container start, `watch` cgroup OOM watch set-up (Podman), " +
		"`interpreter` from start to the bootstrap running (Python's own start, sandbox clock), " +
		"`runtime` runtime delivered over stdin, compiled and run to its ready frame, `ready` the ready frame's trip, " +
		"`init` the sandbox API installed (helpers, proxies, saved tools). The first call also includes the `print(1)` itself " +
		"and the client's round trip; each bridge process is stopped (its container removed) before the next.")
	forEachVariant(b, func(b *testing.B, v variant) {
		binary(b) // built before timing
		var firsts []time.Duration
		phases := map[string][]time.Duration{}
		for b.Loop() {
			b.StopTimer()
			var log lockedBuffer
			// No pool: the stdio bridge would otherwise start its sandbox
			// at once, and this item is the cost of a start.
			cs, cmd, _ := launchBridge(b, append(v.env(), "MCP_BRIDGE_LOG_LEVEL=INFO", "MCP_BRIDGE_POOL_SIZE=0"), &log, nil)
			b.StartTimer()
			first := timedCall(b, cs, map[string]any{"code": "print(1)"}, "1")
			b.StopTimer()
			firsts = append(firsts, first)
			cs.Close()
			cmd.Wait()
			got := loggedPhases(log.String())
			if got == nil {
				b.Fatalf("no \"sandbox started\" line in the bridge's log:\n%s", log.String())
			}
			for k, d := range got {
				phases[k] = append(phases[k], d)
			}
			b.StartTimer()
		}
		st := summarize(firsts)
		st.metrics(b)
		row := []string{v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95)}
		for _, p := range startPhases {
			if ds := phases[p]; len(ds) > 0 {
				row = append(row, ms(summarize(ds).p50))
			} else {
				row = append(row, "—")
			}
		}
		sec.row(v.label, row...)
		if v.oci == "" {
			report.headline("new session, first call p50, "+v.label, "≤ 600 ms", ms(st.p50), st.p50 <= 600*time.Millisecond)
		}
	})
}

// BenchmarkBridgeStart is item 7: from the bridge process's start to its
// answer to initialize. One op is one start; the bridge's stop after it
// runs with the timer stopped.
func BenchmarkBridgeStart(b *testing.B) {
	sec := report.section("7", "Bridge start: process start → `initialize` answer", "configured servers", "starts", "p50", "p95")
	sec.note("Measured by the go-sdk client around `Connect` with a `CommandTransport`: fork/exec of the binary, " +
		"Go runtime start, settings, the MCP handshake, after one start not counted. The stdio bridge starts its sandbox in the background meanwhile (the `initialize` answer does not wait for it).")
	home, _ := npmHome(b)
	binary(b) // built before timing
	env := []string{"HOME=" + home, "MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=WARN"}
	start := func() time.Duration {
		cs, cmd, took := launchBridge(b, env, nil, nil)
		b.StopTimer()
		cs.Close()
		cmd.Wait()
		b.StartTimer()
		return took
	}
	st := loopSamples(b, 1, start)
	sec.row("", "3 (~/MCPs, + the self entry skipped)", fmt.Sprint(st.n), ms(st.p50), ms(st.p95))
	report.headline("bridge start to initialize answer, p50", "≤ 50 ms", ms(st.p50), st.p50 <= 50*time.Millisecond)
}
