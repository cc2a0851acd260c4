package entrypoint

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// BenchmarkExecuteLocal measures a warm call of `pass` with the sandbox
// played by a local python3: the runtime and protocol cost without an
// engine's stream plumbing.
func BenchmarkExecuteLocal(b *testing.B) {
	s := New(enginetest.Local{}, nil)
	defer s.Close()
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res, err := s.Execute(ctx, "pass", 0); err != nil || res.Status != StatusSuccess {
			b.Fatal(res, err)
		}
	}
}

// egressBenchBytes is what BenchmarkEgressLocal moves each way.
const egressBenchBytes = 64 << 20

// BenchmarkEgressLocal measures the egress transport alone (the proxy
// endpoint, the net_* frames and the host's connection), with the
// sandbox played by a local python3: 64 MiB from the host to sandbox
// code (a download) and 64 MiB the other way (an upload) on one
// connection each, and the median of 200 exchanges of a few bytes, each
// on a new connection (connect, send, the answer, the host's close). No engine stream is involved, so this is the
// transport's own ceiling; the engines' streams are measured in
// integration's BenchmarkEgress.
func BenchmarkEgressLocal(b *testing.B) {
	s := New(enginetest.Local{}, &Options{Egress: func(c net.Conn) {
		defer c.Close()
		var dir [1]byte
		if _, err := io.ReadFull(c, dir[:]); err != nil {
			return
		}
		if dir[0] == 'r' {
			c.Write([]byte("ok"))
			return
		}
		if dir[0] == 'd' {
			chunk := make([]byte, 1<<20)
			for range egressBenchBytes >> 20 {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		n, _ := io.CopyN(io.Discard, c, egressBenchBytes)
		fmt.Fprint(c, n)
	}})
	defer s.Close()
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	code := proxyAddr + fmt.Sprintf(`import time
N = %d
s = socket.create_connection((host, port))
t = time.perf_counter()
s.sendall(b"d")
n = 0
while True:
    c = s.recv(1 << 20)
    if not c:
        break
    n += len(c)
down = time.perf_counter() - t
assert n == N, n
s = socket.create_connection((host, port))
t = time.perf_counter()
s.sendall(b"u")
chunk = bytes(1 << 20)
for _ in range(N >> 20):
    s.sendall(chunk)
got = s.recv(100)
up = time.perf_counter() - t
t = []
for _ in range(200):
    a = time.perf_counter()
    s = socket.create_connection((host, port))
    s.sendall(b"r")
    while s.recv(16):
        pass
    s.close()
    t.append(time.perf_counter() - a)
print(down, up, got.decode(), sorted(t)[100])`, egressBenchBytes)
	var down, up, rtt float64
	for b.Loop() {
		res, err := s.Execute(ctx, code, time.Minute)
		if err != nil || res.Status != StatusSuccess {
			b.Fatal(res, err)
		}
		var d, u, r float64
		var n int
		if _, err := fmt.Sscanf(res.Stdout, "%g %g %d %g", &d, &u, &n, &r); err != nil || n != egressBenchBytes {
			b.Fatalf("output %q: %v", res.Stdout, err)
		}
		down, up, rtt = down+d, up+u, rtt+r
	}
	mib := float64(egressBenchBytes) / (1 << 20) * float64(b.N)
	b.ReportMetric(mib/down, "down-MiB/s")
	b.ReportMetric(mib/up, "up-MiB/s")
	b.ReportMetric(rtt/float64(b.N)*1e6, "exchange-µs")
}

// BenchmarkExecuteLocalLane is BenchmarkExecuteLocal over a fast lane.
func BenchmarkExecuteLocalLane(b *testing.B) {
	lanes, err := NewLanes(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	s := New(enginetest.Local{}, &Options{Lanes: lanes})
	defer s.Close()
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if st := lanes.Status()[""]; st.Path != "lane" {
		b.Fatalf("no lane: %+v", st)
	}
	for b.Loop() {
		if res, err := s.Execute(ctx, "pass", 0); err != nil || res.Status != StatusSuccess {
			b.Fatal(res, err)
		}
	}
}
