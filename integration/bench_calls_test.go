//go:build integration

package integration

import (
	"context"
	"encoding/json"
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
// stdio MCP path (go-sdk client, bridge process, container, back).
func BenchmarkWarmCall(b *testing.B) {
	sec := report.section("1", "Warm call: `run_python` `print(1)`, client → bridge → container → client",
		"variant", "calls", "p50", "p95", "mean")
	forEachVariant(b, func(b *testing.B, v variant) {
		cs := connectBridge(b, v.engine, v.env()...)
		args := map[string]any{"code": "print(1)"}
		for range 20 {
			timedCall(b, cs, args, "1")
		}
		samples := make([]time.Duration, 200)
		for i := range samples {
			samples[i] = timedCall(b, cs, args, "1")
		}
		st := summarize(samples)
		st.metrics(b)
		report.setWarm(v.label, st.p50)
		sec.row(v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean))
		if v.oci == "" {
			report.headline("warm call p50, "+v.label, "≤ 2 ms", ms(st.p50), st.p50 <= 2*time.Millisecond)
		}
	})
	sec.note("After 20 warm-up calls on the same client. The session is the one container every call of a client goes to.")
}

// BenchmarkWarmExecute is the warm call without MCP: entrypoint.Session's
// Execute of `pass` in process, the floor of item 1.
func BenchmarkWarmExecute(b *testing.B) {
	sec := report.section("1b", "Warm call without MCP: `Session.Execute(\"pass\")` in process",
		"variant", "calls", "p50", "p95")
	forEachVariant(b, func(b *testing.B, v variant) {
		spec := settings(b).SandboxSpec("bench", nil)
		spec.OCIRuntime = v.oci
		s := entrypoint.New(connect(b, v.engine), &entrypoint.Options{Spec: spec, Logger: testLogger()})
		defer s.Close()
		ctx := context.Background()
		samples := make([]time.Duration, 0, 520)
		for i := range 520 {
			began := time.Now()
			res, err := s.Execute(ctx, "pass", 0)
			if err != nil || res.Status != entrypoint.StatusSuccess {
				b.Fatalf("%+v %v", res, err)
			}
			if i >= 20 {
				samples = append(samples, time.Since(began))
			}
		}
		st := summarize(samples)
		st.metrics(b)
		sec.row(v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95))
	})
}

// originalArgs are the hardened flags of the original's `docker run` per
// call (its first version), with the same image and limits.
func originalArgs(image, oci string) []string {
	args := []string{"run", "--rm", "--interactive", "--network", "none", "--read-only",
		"--pids-limit", "128", "--memory", "512m",
		"--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=64m", "--tmpfs", "/workspace:rw,noexec,nosuid,nodev,size=128m",
		"--workdir", "/workspace", "--env", "HOME=/workspace", "--env", "PYTHONUNBUFFERED=1",
		"--env", "PYTHONIOENCODING=utf-8", "--env", "PYTHONDONTWRITEBYTECODE=1",
		"--security-opt", "no-new-privileges", "--cap-drop", "ALL", "--user", "65534:65534"}
	if oci != "" {
		args = append(args, "--runtime", oci)
	}
	return append(args, image, "python3", "-c", "print(1)")
}

// BenchmarkFreshContainer is item 2: the original's way, a fresh hardened
// container per call through the engine's CLI, against the warm call.
func BenchmarkFreshContainer(b *testing.B) {
	sec := report.section("2", "The original's way: a fresh hardened `docker run --rm` / `podman run --rm` per call",
		"variant", "command", "runs", "p50", "p95", "ratio to the warm call (p50)")
	forEachVariant(b, func(b *testing.B, v variant) {
		image := settings(b).Session.Spec.Image
		args := originalArgs(image, v.oci)
		run := func() time.Duration {
			began := time.Now()
			out, err := exec.Command(v.engine, args...).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "1" {
				b.Fatalf("%s %s: %v\n%s", v.engine, strings.Join(args, " "), err, out)
			}
			return time.Since(began)
		}
		run()
		samples := make([]time.Duration, 10)
		for i := range samples {
			samples[i] = run()
		}
		st := summarize(samples)
		st.metrics(b)
		ratio := "n/a (warm call not measured in this run)"
		if warm, ok := report.warmP50(v.label); ok {
			r := float64(st.p50) / float64(warm)
			ratio = fmt.Sprintf("%.0f×", r)
			report.headline("fresh `"+v.engine+" run` / warm call, "+v.label, "≥ 200×", ratio, r >= 200)
		}
		sec.row(v.label, "`"+v.engine+" run --rm … python3 -c 'print(1)'`", fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ratio)
	})
	sec.note("Flags as the original's first version: `--network none --read-only --pids-limit 128 --memory 512m`, " +
		"tmpfs `/tmp` and `/workspace` (noexec), `no-new-privileges`, `--cap-drop ALL`, `--user 65534:65534`; same image. " +
		"One run first to warm the engine's caches.")
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

func echoDirect(b testing.TB, cs *mcp.ClientSession, msg string) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
	if err != nil || res.IsError {
		b.Fatalf("echo: %+v %v", res, err)
	}
}

// proxiedCode times, inside the sandbox, 100 sequential calls of
// server-everything's echo, then five rounds of 100 concurrent ones.
const proxiedCode = `import asyncio, json, time
for _ in range(10):
    await mcp_everything.echo(message='warm-up')
seq = []
for i in range(100):
    t = time.perf_counter()
    await mcp_everything.echo(message=str(i))
    seq.append(time.perf_counter() - t)
rounds = []
for _ in range(5):
    t = time.perf_counter()
    res = await asyncio.gather(*[mcp_everything.echo(message=str(i)) for i in range(100)])
    rounds.append(time.perf_counter() - t)
    assert len(res) == 100
print(json.dumps({"seq": seq, "gather": rounds}))`

func seconds(v []float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, s := range v {
		out[i] = time.Duration(s * float64(time.Second))
	}
	return out
}

// BenchmarkProxiedCalls is item 3: 100 calls of a real stdio MCP server's
// tool from sandbox code, against the same calls made directly.
func BenchmarkProxiedCalls(b *testing.B) {
	sec := report.section("3", "Proxied tool calls: server-everything `echo` from sandbox code vs. directly",
		"path", "sequential calls", "p50 per call", "p95", "mean", "added per call (p50 / mean)", "100 concurrent (`asyncio.gather`), p50 of 5 rounds")
	direct := directEverything(b)
	for range 10 {
		echoDirect(b, direct, "warm-up")
	}
	seq := make([]time.Duration, 100)
	for i := range seq {
		began := time.Now()
		echoDirect(b, direct, fmt.Sprint(i))
		seq[i] = time.Since(began)
	}
	rounds := make([]time.Duration, 5)
	for r := range rounds {
		began := time.Now()
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() { echoDirect(b, direct, fmt.Sprint(i)) })
		}
		wg.Wait()
		rounds[r] = time.Since(began)
	}
	d, dg := summarize(seq), summarize(rounds)
	sec.row("direct (go-sdk client → server)", "100", ms(d.p50), ms(d.p95), ms(d.mean), "—", ms(dg.p50))
	forEachVariant(b, func(b *testing.B, v variant) {
		home, _ := npmHome(b)
		cs := connectBridge(b, v.engine, append(v.env(), "HOME="+home)...)
		text, isErr := runPython(b, cs, map[string]any{"code": proxiedCode, "servers": []string{"everything"}})
		var got struct{ Seq, Gather []float64 }
		if isErr || json.Unmarshal([]byte(text), &got) != nil || len(got.Seq) != 100 {
			b.Fatalf("proxied calls: %q", text)
		}
		p, pg := summarize(seconds(got.Seq)), summarize(seconds(got.Gather))
		p.metrics(b)
		added := p.p50 - d.p50
		sec.row("sandbox, "+v.label, "100", ms(p.p50), ms(p.p95), ms(p.mean),
			ms(added)+" / "+ms(p.mean-d.mean), ms(pg.p50))
		if v.oci == "" {
			report.headline("proxied call, added per call (p50), "+v.label, "≤ 1 ms", ms(added), added <= time.Millisecond)
		}
	})
	sec.note("Both paths use one warm client of the same server-everything build. Sandbox calls are timed inside the " +
		"sandbox (`time.perf_counter` around each `await mcp_everything.echo(...)`): sandbox → runtime → host session → " +
		"bridge → go-sdk client → server and back.")
}

// chainCode calls get-sum and then echo with its result.
const chainCode = "s = await mcp_everything.get_sum(a=1, b=2)\nprint(await mcp_everything.echo(message=s))"

// BenchmarkProxiedChain is item 8: one run_python whose code calls
// get-sum, then echo with its result, measured from the client.
func BenchmarkProxiedChain(b *testing.B) {
	sec := report.section("8", "A proxied chain: one `run_python` calling `get-sum`, then `echo` with its result",
		"variant", "calls", "p50", "p95", "mean")
	forEachVariant(b, func(b *testing.B, v variant) {
		home, _ := npmHome(b)
		cs := connectBridge(b, v.engine, append(v.env(), "HOME="+home)...)
		args := map[string]any{"code": chainCode, "servers": []string{"everything"}}
		for range 10 {
			timedCall(b, cs, args, "3")
		}
		samples := make([]time.Duration, 100)
		for i := range samples {
			samples[i] = timedCall(b, cs, args, "3")
		}
		st := summarize(samples)
		st.metrics(b)
		sec.row(v.label, fmt.Sprint(st.n), ms(st.p50), ms(st.p95), ms(st.mean))
		if v.oci == "" {
			report.headline("get-sum → echo chain p50, "+v.label, "≤ 4 ms", ms(st.p50), st.p50 <= 4*time.Millisecond)
		}
	})
	sec.note("Client → bridge → sandbox → (get-sum → server-everything) → sandbox → (echo → server-everything) → sandbox → client.")
}
