//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// timedCall runs run_python with args and returns how long the client
// waited; the call must succeed and print want (when want is not empty).
func timedCall(b testing.TB, cs *mcp.ClientSession, args map[string]any, want string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	took := time.Since(began)
	if err != nil {
		b.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || (want != "" && !strings.Contains(text, want)) {
		b.Fatalf("run_python %v: %q (isError %v), want %q", args["code"], text, res.IsError, want)
	}
	return took
}

// BenchmarkWarmCall is item 1: run_python with print(1) through the real
// stdio MCP path (go-sdk client, bridge process, container, back). One op
// loopCalls makes warmup untimed calls, then one timed call per b.Loop
// iteration, each checked to print want; it reports and returns the
// samples' statistics.
func loopCalls(b *testing.B, cs *mcp.ClientSession, args map[string]any, want string, warmup int) stats {
	return loopSamples(b, warmup, func() time.Duration { return timedCall(b, cs, args, want) })
}

// is one warm call.
func BenchmarkWarmCall(b *testing.B) {
	sec := report.section("1", "Warm call: `run_python` `print(1)`, client → bridge → container → client",
		"variant", "calls", "p50", "p95", "mean")
	sec.note("After 20 warm-up calls on the same client. The session is the one container every call of a client goes to.")
	forEachVariant(b, func(b *testing.B, v variant) {
		cs := connectBridge(b, v.engine, v.env()...)
		st := loopCalls(b, cs, map[string]any{"code": "print(1)"}, "1", 20)
		report.setWarm(v.label, st.p50)
		sec.row(v.label, v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean))
		if v.oci == "" {
			report.headline("warm call p50, "+v.label, "≤ 1.0 ms", ms(st.p50), st.p50 <= time.Millisecond)
		} else {
			report.headline("warm call p50, "+v.label, "≤ 3 ms", ms(st.p50), st.p50 <= 3*time.Millisecond)
		}
	})
}

// timedExecute times one s.Execute of code, which must succeed.
func timedExecute(b testing.TB, ctx context.Context, s *entrypoint.Session, code string) time.Duration {
	b.Helper()
	began := time.Now()
	res, err := s.Execute(ctx, code, 0)
	took := time.Since(began)
	if err != nil || res.Status != entrypoint.StatusSuccess {
		b.Fatalf("%+v %v", res, err)
	}
	return took
}

// benchSession returns a session on v named name, closed when b ends.
func benchSession(b testing.TB, v variant, name string) *entrypoint.Session {
	spec := settings(b).SandboxSpec(name, nil)
	spec.OCIRuntime = v.oci
	opts := &entrypoint.Options{Spec: spec, Logger: testLogger()}
	if v.lane {
		lanes, err := entrypoint.NewLanes(filepath.Join(b.TempDir(), "lanes"), testLogger())
		if err != nil {
			b.Fatal(err)
		}
		opts.Lanes = lanes
	}
	s := entrypoint.New(connect(b, v.engine), opts)
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkWarmExecute is the warm call without MCP: entrypoint.Session's
// Execute of `pass` in process, the floor of item 1. One op is one Execute.
func BenchmarkWarmExecute(b *testing.B) {
	sec := report.section("1b", "Warm call without MCP: `Session.Execute(\"pass\")` in process",
		"variant", "calls", "p50", "p95")
	sec.note("After 20 warm-up calls on the same session.")
	forEachVariant(b, func(b *testing.B, v variant) {
		s := benchSession(b, v, "bench")
		ctx := context.Background()
		st := loopSamples(b, 20, func() time.Duration { return timedExecute(b, ctx, s, "pass") })
		sec.row(v.label, v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95))
	})
}

// originalArgs is a `docker run` with the hardening the original applied
// to each call in its first version (BENCHMARKS.md section 2 lists it):
// the same isolation, limits, tmpfs mounts, environment and user, on the
// same image. Only the settings matter to the measurement, not their order.
func originalArgs(image, oci string) []string {
	noexec := "rw,noexec,nosuid,nodev,size="
	args := []string{"run", "--rm", "--interactive",
		// isolation
		"--user", "65534:65534", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--network", "none", "--read-only",
		// limits
		"--memory", "512m", "--pids-limit", "128",
		// writable scratch space
		"--tmpfs", "/workspace:" + noexec + "128m", "--tmpfs", "/tmp:" + noexec + "64m", "--workdir", "/workspace"}
	for _, kv := range []string{"HOME=/workspace", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "PYTHONUNBUFFERED=1"} {
		args = append(args, "--env", kv)
	}
	if oci != "" {
		args = append(args, "--runtime", oci)
	}
	return append(args, image, "python3", "-c", "print(1)")
}

// BenchmarkFreshContainer is item 2: the original's way, a fresh hardened
// container per call through the engine's CLI, against the warm call. One
// op is one `docker run --rm` / `podman run --rm`.
func BenchmarkFreshContainer(b *testing.B) {
	sec := report.section("2", "The original's way: a fresh hardened `docker run --rm` / `podman run --rm` per call",
		"variant", "command", "runs", "p50", "p95", "ratio to the warm call (p50)")
	sec.note("Flags as the original's first version: `--network none --read-only --pids-limit 128 --memory 512m`, " +
		"tmpfs `/tmp` and `/workspace` (noexec), `no-new-privileges`, `--cap-drop ALL`, `--user 65534:65534`; same image. " +
		"One run first to warm the engine's caches.")
	forEachVariant(b, func(b *testing.B, v variant) {
		image := settings(b).Session.Spec.Image
		args := originalArgs(image, v.oci)
		run := func() time.Duration {
			began := time.Now()
			out, err := exec.Command(v.engine, args...).CombinedOutput()
			took := time.Since(began)
			if err != nil || strings.TrimSpace(string(out)) != "1" {
				b.Fatalf("%s %s: %v\n%s", v.engine, strings.Join(args, " "), err, out)
			}
			return took
		}
		st := loopSamples(b, 1, run)
		ratio := "n/a (warm call not measured in this run)"
		if warm, ok := report.warmP50(v.label); ok {
			r := float64(st.p50) / float64(warm)
			ratio = fmt.Sprintf("%.0f×", r)
			report.headline("fresh `"+v.engine+" run` / warm call, "+v.label, "≥ 400×", ratio, r >= 400)
		}
		sec.row(v.label, v.label, "`"+v.engine+" run --rm … python3 -c 'print(1)'`", fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ratio)
	})
}

// directEverything connects an MCP client straight to server-everything.
func directEverything(b testing.TB) *mcp.ClientSession {
	b.Helper()
	bin := filepath.Join(nodeDir(b), "node_modules", ".bin", "mcp-server-everything")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Stderr = nil
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// echoDirect calls server-everything's echo on cs.
func echoDirect(cs *mcp.ClientSession, msg string) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
	if err == nil && res.IsError {
		err = fmt.Errorf("echo: %+v", res.Content)
	}
	return err
}

// echoRound makes 100 concurrent echo calls on cs.
func echoRound(cs *mcp.ClientSession) error {
	errs := make([]error, 100)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = echoDirect(cs, fmt.Sprint(i)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// proxiedWarmUp is the warm-up of the sandbox's client of server-everything.
const proxiedWarmUp = "for _ in range(10):\n    await mcp_everything.echo(message='warm-up')"

// proxiedSequential times, inside the sandbox, %d sequential calls of
// server-everything's echo, in nanoseconds.
const proxiedSequential = `import json, time
out = []
for i in range(%d):
    t = time.perf_counter_ns()
    await mcp_everything.echo(message=str(i))
    out.append(time.perf_counter_ns() - t)
print(json.dumps(out))`

// proxiedConcurrent times, inside the sandbox, %d rounds of 100 concurrent
// calls of server-everything's echo, in nanoseconds.
const proxiedConcurrent = `import asyncio, json, time
out = []
for _ in range(%d):
    t = time.perf_counter_ns()
    res = await asyncio.gather(*[mcp_everything.echo(message=str(i)) for i in range(100)])
    out.append(time.perf_counter_ns() - t)
    assert len(res) == 100
print(json.dumps(out))`

// sandboxTimes runs code (a format of one count) on cs for n iterations
// in all, at most batch per run_python call, and returns the times the
// code printed.
func sandboxTimes(b testing.TB, cs *mcp.ClientSession, code string, n, batch int) []time.Duration {
	b.Helper()
	out := make([]time.Duration, 0, n)
	for done := 0; done < n; {
		k := min(batch, n-done)
		text, isErr := runPython(b, cs, map[string]any{"code": fmt.Sprintf(code, k), "servers": []string{"everything"}, "timeout": 120})
		var got []int64
		if isErr || json.Unmarshal([]byte(text), &got) != nil || len(got) != k {
			b.Fatalf("proxied calls: %q", text)
		}
		for _, ns := range got {
			out = append(out, time.Duration(ns))
		}
		done += k
	}
	return out
}

// proxiedPath is one row of item 3 as its sub-benchmarks fill it.
type proxiedPath struct {
	label        string
	headline     bool // a goal row: a sandbox path without a second OCI runtime
	seq, concurr *stats
}

// proxied holds item 3's rows, "direct" first.
var proxied struct {
	sync.Mutex
	keys  []string
	paths map[string]*proxiedPath
}

// setProxied records the sequential (concurrent false) or concurrent
// figures of path key and rewrites item 3's rows and goal.
func setProxied(sec *reportSection, key string, p proxiedPath, concurrent bool, st stats) {
	proxied.Lock()
	defer proxied.Unlock()
	if proxied.paths == nil {
		proxied.paths = map[string]*proxiedPath{}
	}
	cur, ok := proxied.paths[key]
	if !ok {
		cur = &p
		proxied.paths[key] = cur
		proxied.keys = append(proxied.keys, key)
	}
	if concurrent {
		cur.concurr = &st
	} else {
		cur.seq = &st
	}
	direct := proxied.paths["direct"]
	for _, k := range proxied.keys {
		p := proxied.paths[k]
		row := []string{p.label, "—", "—", "—", "—", "—", "—"}
		if p.seq != nil {
			row[1], row[2], row[3], row[4] = fmt.Sprint(p.seq.n), ms(p.seq.p50), ms(p.seq.p95), ms(p.seq.mean)
			if k != "direct" && direct != nil && direct.seq != nil {
				added := p.seq.p50 - direct.seq.p50
				row[5] = ms(added) + " / " + ms(p.seq.mean-direct.seq.mean)
				if p.headline {
					r := float64(p.seq.p50) / float64(direct.seq.p50)
					report.headline("proxied call from the sandbox / the same call direct (p50), "+k, "≤ 2×",
						fmt.Sprintf("%.1f× (%s vs %s)", r, ms(p.seq.p50), ms(direct.seq.p50)), r <= 2)
				}
			}
		}
		if p.concurr != nil {
			row[6] = ms(p.concurr.p50) + fmt.Sprintf(" (%d rounds)", p.concurr.n)
		}
		sec.row(k, row...)
	}
}

// BenchmarkProxiedCalls is item 3: calls of a real stdio MCP server's tool
// from sandbox code, against the same calls made directly. In
// .../sequential/PATH one op is one echo call; in .../concurrent/PATH one
// op is one round of 100 concurrent echo calls. Sandbox calls are timed
// inside the sandbox, b.N of them in one run_python (in batches), so the
// ns/op of a sandbox path also carries a share of that call's own trip.
func BenchmarkProxiedCalls(b *testing.B) {
	sec := report.section("3", "Proxied tool calls: server-everything `echo` from sandbox code vs. directly",
		"path", "sequential calls", "p50 per call", "p95", "mean", "added per call (p50 / mean)", "100 concurrent (`asyncio.gather`), p50 of the rounds")
	sec.note("Both paths use one warm client of the same server-everything build, after 10 warm-up calls. Sandbox calls are timed inside the " +
		"sandbox (`time.perf_counter_ns` around each `await mcp_everything.echo(...)`, or around each `asyncio.gather` of 100): " +
		"sandbox → runtime → host session → bridge → go-sdk client → server and back.")
	for _, mode := range []struct {
		name       string
		concurrent bool
		code       string
		batch      int
	}{{"sequential", false, proxiedSequential, 2000}, {"concurrent", true, proxiedConcurrent, 100}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Run("direct", func(b *testing.B) {
				direct := directEverything(b)
				op := func() error { return echoDirect(direct, "x") }
				if mode.concurrent {
					op = func() error { return echoRound(direct) }
				}
				for range 10 {
					if err := echoDirect(direct, "warm-up"); err != nil {
						b.Fatal(err)
					}
				}
				var samples []time.Duration
				for b.Loop() {
					began := time.Now()
					if err := op(); err != nil {
						b.Fatal(err)
					}
					samples = append(samples, time.Since(began))
				}
				st := summarize(samples)
				st.metrics(b)
				setProxied(sec, "direct", proxiedPath{label: "direct (go-sdk client → server)"}, mode.concurrent, st)
			})
			forEachVariant(b, func(b *testing.B, v variant) {
				home, _ := npmHome(b)
				cs := connectBridge(b, v.engine, append(v.env(), "HOME="+home)...)
				if text, isErr := runPython(b, cs, map[string]any{"code": proxiedWarmUp, "servers": []string{"everything"}}); isErr {
					b.Fatalf("warm-up: %q", text)
				}
				b.ResetTimer()
				samples := sandboxTimes(b, cs, mode.code, b.N, mode.batch)
				b.StopTimer()
				st := summarize(samples)
				st.metrics(b)
				setProxied(sec, v.label, proxiedPath{label: "sandbox, " + v.label, headline: v.oci == ""}, mode.concurrent, st)
			})
		})
	}
}

// chainCode calls get-sum and then echo with its result.
const chainCode = "s = await mcp_everything.get_sum(a=1, b=2)\nprint(await mcp_everything.echo(message=s))"

// BenchmarkProxiedChain is item 8: one run_python whose code calls
// get-sum, then echo with its result, measured from the client. One op is
// one such call.
func BenchmarkProxiedChain(b *testing.B) {
	sec := report.section("8", "A proxied chain: one `run_python` calling `get-sum`, then `echo` with its result",
		"variant", "calls", "p50", "p95", "mean")
	sec.note("After 10 warm-up calls. Client → bridge → sandbox → (get-sum → server-everything) → sandbox → " +
		"(echo → server-everything) → sandbox → client. The peer is UTCP's code-mode (npm `@utcp/code-mode`, " +
		"`integration/utcp/chain.mjs`): the same two calls to the same server-everything build over stdio, from code run by " +
		"`callToolChain` in a V8 isolate (`isolated-vm`, Node 22), timed around each execution after 10 warm-up ones.")
	ours := map[string]time.Duration{} // the variants run one after another
	forEachVariant(b, func(b *testing.B, v variant) {
		home, _ := npmHome(b)
		cs := connectBridge(b, v.engine, append(v.env(), "HOME="+home)...)
		st := loopCalls(b, cs, map[string]any{"code": chainCode, "servers": []string{"everything"}}, "3", 10)
		sec.row(v.label, v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean))
		ours[v.label] = st.p50
		if v.oci == "" {
			report.headline("get-sum → echo chain p50, "+v.label, "≤ 4 ms", ms(st.p50), st.p50 <= 4*time.Millisecond)
		}
	})
	b.Run("utcp-code-mode", func(b *testing.B) {
		peer := utcpChain(b, b.N)
		sec.row("~utcp", "UTCP code-mode "+peer.Version+" ("+peer.Node+")", fmt.Sprint(peer.N), msf(peer.P50), msf(peer.P95), msf(peer.Mean))
		b.ReportMetric(peer.P50, "p50-ms")
		for _, label := range []string{"docker", "podman"} {
			if d, ok := ours[label]; ok && d > 0 {
				ratio := peer.P50 / (float64(d.Microseconds()) / 1000)
				report.headline("chain: UTCP code-mode p50 / ours, "+label, "≥ 2×", fmt.Sprintf("%.1f× (%s vs %s)", ratio, msf(peer.P50), ms(d)), ratio >= 2)
			}
		}
	})
}
