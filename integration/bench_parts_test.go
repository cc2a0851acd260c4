//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkWarmCallParts splits the warm call (item 1) into its hops, in
// one process so that a -cpuprofile covers the client, the bridge and the
// host side of the sandbox: (a) Session.Execute("print(1)") alone; (b)
// run_python through the bridge in process, the client on the other end
// of a pipe speaking the stdio transport's framing; (c) the same through
// the built binary over real stdio (item 1). One op is one call of each.
func BenchmarkWarmCallParts(b *testing.B) {
	sec := report.section("1c", "Where a warm call's time goes: the same `print(1)` hop by hop",
		"variant", "path", "calls", "p50", "p95", "mean")
	sec.note("(0) a frame-sized line written to a container running a bare `os.read`/`os.write` loop and read back: the engine's attach path, the floor of any call; (a) `Session.Execute` in process (the sandbox round trip and the runtime); (b) `run_python` through the bridge in process, " +
		"its client on the other end of an in-process pipe with the stdio transport's framing (adds MCP decoding, validation, " +
		"the bridge's call path and result rendering); (c) the bridge as its own process over stdio (item 1: adds the process hop); " +
		"(f) the floor of (c) without a sandbox: a go-sdk server over stdio whose `run_python` answers at once (the test binary run as one), " +
		"what any go-sdk server costs a go-sdk client here. The loops interleave call by call, so they share the machine's state; " +
		"(c) can be no faster than (f) plus (a).")
	forEachVariant(b, func(b *testing.B, v variant) {
		paths, split := warmCallPaths(b, v)
		interleave(paths, times(20))
		*split = callSplit{}
		samples := interleave(paths, b.Loop)
		for i, p := range paths {
			st := summarize(samples[i])
			sec.row(v.label+p.name, v.label, p.name, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean))
			b.ReportMetric(float64(st.p50.Microseconds())/1000, fmt.Sprintf("p50-ms-%d", i))
		}
		for _, part := range []struct {
			name    string
			samples []time.Duration
		}{
			{"(b) of which: client → the bridge's tools/call handler", split.pre},
			{"(b) of which: the handler (the bridge's call path, Session.Run)", split.handler},
			{"(b) of which: handler → client", split.post},
		} {
			st := summarize(part.samples)
			sec.row(v.label+part.name, v.label, part.name, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean))
		}
	})
}

// A callPath is one path of item 1c: its name and one timed call.
type callPath struct {
	name string
	call func() time.Duration
}

// callSplit is path (b)'s call cut in three at the bridge's tools/call
// handler: client → handler, the handler, handler → client.
type callSplit struct{ pre, handler, post []time.Duration }

// warmCallPaths sets up item 1c's paths on v, in the order they
// interleave: (0) the attach floor, (a0) and (a) Session.Execute, (b) the
// bridge in process, (c) the built binary over stdio, (f) the MCP floor. Each (b) call
// appends its three parts to the returned split. Everything it starts
// ends with tb.
func warmCallPaths(tb testing.TB, v variant) ([]callPath, *callSplit) {
	tb.Helper()
	ctx := context.Background()
	s := benchSession(tb, v, "bench-parts")

	var tIn, tOut time.Time
	split := &callSplit{}
	inproc := inProcessBridge(tb, v, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			tIn = time.Now()
			r, err := next(ctx, method, req)
			tOut = time.Now()
			return r, err
		}
	})
	stdio := connectBridge(tb, v.engine, v.env()...)
	floor := connectFloor(tb)

	// The floor: a line echoed by a plain Python loop in a container
	// of the same image and hardening, over the same attached streams.
	echoSpec := settings(tb).SandboxSpec("bench-echo", []string{"python3", "-u", "-c",
		"import os\nwhile True:\n    b = os.read(0, 65536)\n    if not b: break\n    os.write(1, b)\n"})
	echoSpec.OCIRuntime = v.oci
	echo, err := connect(tb, v.engine).Start(ctx, echoSpec)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { echo.Close() })
	echoOut := bufio.NewReader(echo.Stdout())
	line := []byte(`{"t":"exec","id":"1","code":"print(1)","max_output":0}` + "\n")

	args := map[string]any{"code": "print(1)"}
	return []callPath{
		{"(0) a line echoed through the container", func() time.Duration {
			began := time.Now()
			if _, err := echo.Stdin().Write(line); err != nil {
				tb.Fatal(err)
			}
			if _, err := echoOut.ReadSlice('\n'); err != nil {
				tb.Fatal(err)
			}
			return time.Since(began)
		}},
		{"(a0) Execute pass", func() time.Duration { return timedExecute(tb, ctx, s, "pass") }},
		{"(a) Execute", func() time.Duration { return timedExecute(tb, ctx, s, "print(1)") }},
		{"(b) bridge in process", func() time.Duration {
			began := time.Now()
			d := timedCall(tb, inproc, args, "1")
			end := began.Add(d)
			split.pre = append(split.pre, tIn.Sub(began))
			split.handler = append(split.handler, tOut.Sub(tIn))
			split.post = append(split.post, end.Sub(tOut))
			return d
		}},
		{"(c) bridge over stdio", func() time.Duration { return timedCall(tb, stdio, args, "1") }},
		{"(f) a go-sdk server over stdio answering at once (no sandbox)", func() time.Duration { return timedCall(tb, floor, args, "1") }},
	}, split
}

// interleave calls every path once per round, one path after the other,
// for as long as more returns true, and returns each path's samples.
func interleave(paths []callPath, more func() bool) [][]time.Duration {
	samples := make([][]time.Duration, len(paths))
	for more() {
		for i, p := range paths {
			samples[i] = append(samples[i], p.call())
		}
	}
	return samples
}

// times returns a more for interleave that says yes n times.
func times(n int) func() bool {
	return func() bool { n--; return n >= 0 }
}
