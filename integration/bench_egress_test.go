//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// egressBenchCode is run in a sandbox (through the gateway) and by the
// host's python3 (directly): 200 small requests, each on a connection of
// its own, after one more, and three 100 MiB downloads; it prints the
// median request time in microseconds, then each download's bytes and
// seconds.
const egressBenchCode = `import time, urllib.request
small, big = %q, %q
t = []
for i in range(201):
    s = time.perf_counter()
    urllib.request.urlopen(small, timeout=30).read()
    t.append(time.perf_counter() - s)
t = sorted(t[1:])
print(round(t[len(t) // 2] * 1e6))
for _ in range(3):
    s = time.perf_counter()
    n = 0
    r = urllib.request.urlopen(big, timeout=60)
    while True:
        c = r.read(1 << 20)
        if not c:
            break
        n += len(c)
    print(n, time.perf_counter() - s)`

// egressBigBytes is the size of the download of item 14.
const egressBigBytes = 100 << 20

// BenchmarkEgress measures the egress gateway (item 14): a small HTTP
// request through it from a sandbox against the same request made
// directly by python3 on the host, a 100 MiB download both ways, and the
// bridge's memory with 200 connections held open through the gateway.
func BenchmarkEgress(b *testing.B) {
	sec := report.section("14", "Egress gateway: requests and a download through it, against the same from the host",
		"variant", "what", "direct from the host (python3)", "through the gateway (sandbox)", "ratio", "the engine's stream alone")
	sec.note("The same Python code (urllib, one connection a request) runs in a sandbox, through its proxy endpoint, " +
		"the net_* frames and the bridge's gateway, and with python3 on the host straight to the server (a loopback " +
		"HTTP server of the test). Request: median of 200 after one. Download: 100 MiB read in 1 MiB reads, the median of " +
		"three. The engine's stream alone: 100 MiB written by the test to the stdin of a container of the same image and " +
		"hardening running a bare `os.read` loop, over the same attached streams, the median of three: the ceiling of " +
		"any transport over the engine's stream, as the download's bytes cross it in that direction. Memory: " +
		"the bridge's RSS (VmRSS) before and with 200 connections held open through the gateway.")
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", fmt.Sprint(egressBigBytes))
			chunk := make([]byte, 1<<20)
			for range egressBigBytes >> 20 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/hold":
			w.(http.Flusher).Flush()
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	defer close(hold)
	hp := strings.TrimPrefix(srv.URL, "http://")
	dir := b.TempDir()
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, fmt.Appendf(nil, `{"network": {"allow": [%q], "max_connections": 256, "max_bytes_per_call": 1073741824}}`, hp), 0o600); err != nil {
		b.Fatal(err)
	}
	code := fmt.Sprintf(egressBenchCode, srv.URL+"/small", srv.URL+"/big")
	direct := func() (int, float64) {
		cmd := exec.Command("python3", "-c", code)
		cmd.Env = envWithout("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("python3 on the host: %v", err)
		}
		return parseEgressBench(b, string(out))
	}
	forEachVariant(b, func(b *testing.B, v variant) {
		stream := streamCeiling(b, v)
		cs, cmd := connectBridgeCmd(b, v.engine, append(v.env(), "MCP_BRIDGE_POLICY="+policy)...)
		timedCall(b, cs, map[string]any{"code": "print(1)"}, "1")
		for b.Loop() {
			hostReq, hostDown := direct()
			text, isErr := runPython(b, cs, map[string]any{"code": code, "timeout": 120})
			if isErr {
				b.Fatalf("through the gateway: %s", text)
			}
			gwReq, gwDown := parseEgressBench(b, text)
			sec.row(v.label+"/request", v.label, "small request (median)", fmt.Sprintf("%d µs", hostReq), fmt.Sprintf("%d µs", gwReq),
				fmt.Sprintf("%.1f×", float64(gwReq)/float64(hostReq)), "—")
			mbps := func(s float64) string { return fmt.Sprintf("%.0f MiB/s", float64(egressBigBytes)/(1<<20)/s) }
			sec.row(v.label+"/download", v.label, "100 MiB download", mbps(hostDown), mbps(gwDown),
				fmt.Sprintf("%.2f of direct", hostDown/gwDown), fmt.Sprintf("%s (the gateway: %.2f of it)", mbps(stream), stream/gwDown))
			b.ReportMetric(float64(gwReq), "gw-request-µs")
			b.ReportMetric(float64(egressBigBytes)/(1<<20)/gwDown, "gw-MiB/s")
		}
		before := rssBytes(b, cmd.Process.Pid)
		held := fmt.Sprintf(`import os, socket
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
addr = (proxy[0].split("//")[1], int(proxy[1]))
held = []
for i in range(200):
    s = socket.create_connection(addr, timeout=10)
    s.sendall(b"GET http://%s/hold HTTP/1.1\r\nHost: %s\r\n\r\n")
    held.append(s)
for s in held:
    s.settimeout(10)
    s.recv(1)
print(len(held))`, hp, hp)
		if text, isErr := runPython(b, cs, map[string]any{"code": held, "timeout": 60}); isErr || text != "200" {
			b.Fatalf("200 held connections: %s", text)
		}
		time.Sleep(500 * time.Millisecond)
		after := rssBytes(b, cmd.Process.Pid)
		sec.row(v.label+"/memory", v.label, "bridge RSS, 200 connections open", mib(before)+" (none open)", mib(after),
			fmt.Sprintf("+%.0f KiB a connection", float64(after-before)/1024/200), "—")
		runPython(b, cs, map[string]any{"code": "for s in held: s.close()"})
	})
}

// parseEgressBench reads egressBenchCode's output: the median request in
// microseconds and the median download's seconds.
func parseEgressBench(b *testing.B, out string) (int, float64) {
	b.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var req int
	if _, err := fmt.Sscan(lines[0], &req); err != nil || len(lines) != 4 {
		b.Fatalf("egress bench output %q: %v", out, err)
	}
	var secs []float64
	for _, l := range lines[1:] {
		var n int
		var s float64
		if _, err := fmt.Sscan(l, &n, &s); err != nil || n != egressBigBytes || s <= 0 {
			b.Fatalf("egress bench output %q: %v", out, err)
		}
		secs = append(secs, s)
	}
	slices.Sort(secs)
	return req, secs[1]
}

// streamCeiling returns the median seconds of three 100 MiB writes to the
// stdin of a container of v's image and hardening running a bare read
// loop, until the loop says it has them all.
func streamCeiling(b *testing.B, v variant) float64 {
	b.Helper()
	ctx := context.Background()
	spec := settings(b).SandboxSpec("bench-stream", []string{"python3", "-u", "-c", fmt.Sprintf(`import os
while True:
    n = 0
    while n < %d:
        c = os.read(0, 1 << 20)
        if not c:
            raise SystemExit
        n += len(c)
    os.write(1, b"ok\n")`, egressBigBytes)})
	spec.OCIRuntime = v.oci
	box, err := connect(b, v.engine).Start(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	out := bufio.NewReader(box.Stdout())
	chunk := make([]byte, 1<<20)
	var secs []float64
	for range 3 {
		start := time.Now()
		for range egressBigBytes >> 20 {
			if _, err := box.Stdin().Write(chunk); err != nil {
				b.Fatalf("writing to the container: %v", err)
			}
		}
		if line, err := out.ReadString('\n'); err != nil || line != "ok\n" {
			b.Fatalf("the container's answer: %q, %v", line, err)
		}
		secs = append(secs, time.Since(start).Seconds())
	}
	slices.Sort(secs)
	return secs[1]
}
