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
// cached, no pool, and where its time goes as the bridge logs it.
func BenchmarkNewSession(b *testing.B) {
	sec := report.section("4", "New session: the first `run_python` of a new client (image cached, no pool)",
		append([]string{"variant", "sessions", "first call p50", "p95"}, startPhases...)...)
	forEachVariant(b, func(b *testing.B, v variant) {
		var firsts []time.Duration
		phases := map[string][]time.Duration{}
		for range 10 {
			var log lockedBuffer
			cs, cmd, _ := launchBridge(b, append(v.env(), "MCP_BRIDGE_LOG_LEVEL=INFO"), &log)
			firsts = append(firsts, timedCall(b, cs, map[string]any{"code": "print(1)"}, "1"))
			cs.Close()
			cmd.Wait()
			got := loggedPhases(log.String())
			if got == nil {
				b.Fatalf("no \"sandbox started\" line in the bridge's log:\n%s", log.String())
			}
			for k, d := range got {
				phases[k] = append(phases[k], d)
			}
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
		sec.row(row...)
		if v.oci == "" {
			report.headline("new session, first call p50, "+v.label, "≤ 600 ms", ms(st.p50), st.p50 <= 600*time.Millisecond)
		}
	})
	sec.note("Phases (p50 of each, from the bridge's `sandbox started` log line, `engine.StartTrace`): " +
		"`image` image lookup (cached), `create` container create, `check` inspect to verify the OCI runtime (Podman, when one is asked for), " +
		"`attach` stream attach, `start` container start, `watch` cgroup OOM watch set-up (Podman), " +
		"`interpreter` from start to the bootstrap running (Python's own start, sandbox clock), " +
		"`runtime` runtime delivered over stdin, compiled and run to its ready frame, `ready` the ready frame's trip, " +
		"`init` the sandbox API installed (helpers, proxies, saved tools). The first call also includes the `print(1)` itself " +
		"and the client's round trip; each bridge process is stopped (its container removed) before the next.")
}

// BenchmarkBridgeStart is item 7: from the bridge process's start to its
// answer to initialize.
func BenchmarkBridgeStart(b *testing.B) {
	sec := report.section("7", "Bridge start: process start → `initialize` answer", "configured servers", "starts", "p50", "p95")
	home, _ := npmHome(b)
	binary(b) // built before timing
	samples := make([]time.Duration, 0, 20)
	for range 21 {
		cs, cmd, took := launchBridge(b, []string{"HOME=" + home, "MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=WARN"}, nil)
		samples = append(samples, took)
		cs.Close()
		cmd.Wait()
	}
	st := summarize(samples[1:])
	st.metrics(b)
	sec.row("3 (~/MCPs, + the self entry skipped)", fmt.Sprint(st.n), ms(st.p50), ms(st.p95))
	report.headline("bridge start to initialize answer, p50", "≤ 50 ms", ms(st.p50), st.p50 <= 50*time.Millisecond)
	sec.note("Measured by the go-sdk client around `Connect` with a `CommandTransport`: fork/exec of the binary, " +
		"Go runtime start, settings, the MCP handshake. The engine is not contacted before the first call.")
}
