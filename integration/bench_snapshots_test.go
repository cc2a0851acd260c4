//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestBenchSnapshots measures, on Docker with gVisor, what sleeping,
// waking and forking cost a sandbox whose Python holds data that does
// not compress (os.urandom): a checkpoint that stops it (sleep), a
// restore (wake), a fork into 4 (a checkpoint that leaves it running,
// four containers made and restored), and the disk a sleeping one
// holds; p50 and p95 over MCP_BENCH_SNAPSHOT_RUNS runs (5) for each size
// of MCP_BENCH_SNAPSHOT_MIB (10,100). It runs only with MCP_BENCH=1
// (BENCHMARKS.md item 27 records a run).
func TestBenchSnapshots(t *testing.T) {
	if os.Getenv("MCP_BENCH") != "1" {
		t.Skip("a benchmark: set MCP_BENCH=1")
	}
	e := needSnapshots(t)
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("MCP_BENCH_SNAPSHOT_RUNS")); err == nil && v > 0 {
		runs = v
	}
	sizes := []int{10, 100}
	if v := os.Getenv("MCP_BENCH_SNAPSHOT_MIB"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("MCP_BENCH_SNAPSHOT_MIB: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, mib := range sizes {
		spec := pySpec(t, "bench-snapshots")
		spec.OCIRuntime = "runsc"
		spec.MemoryBytes = max(spec.WithDefaults().MemoryBytes, int64(mib+256)<<20)
		spec.Cmd = []string{"python3", "-u", "-c", fmt.Sprintf(
			"import os, time\nb = os.urandom(%d << 20)\nprint('ready', flush=True)\ntime.sleep(86400)", mib)}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		sb, err := e.Start(ctx, spec)
		if err != nil {
			cancel()
			t.Fatalf("starting the sandbox: %v", err)
		}
		line, _ := bufio.NewReader(sb.Stdout()).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			sb.Close()
			cancel()
			t.Fatalf("the sandbox said %q", line)
		}
		var sleeps, wakes, forks []time.Duration
		var disk int64
		for range runs {
			t0 := time.Now()
			info, err := engine.SleepSandbox(ctx, e, "", sb.ID())
			if err != nil {
				t.Fatalf("sleep: %v", err)
			}
			sleeps, disk = append(sleeps, time.Since(t0)), info.Bytes
			t0 = time.Now()
			if woke, err := engine.WakeSandbox(ctx, e, "", sb.ID()); err != nil || !woke {
				t.Fatalf("wake: %v %v", woke, err)
			}
			wakes = append(wakes, time.Since(t0))
			t0 = time.Now()
			ids, err := engine.ForkSandbox(ctx, e, "", sb.ID(), 4, map[string]string{engine.LabelSession: "bench-snapshots/fork"})
			if err != nil {
				t.Fatalf("fork: %v", err)
			}
			forks = append(forks, time.Since(t0))
			for _, id := range ids {
				engine.RemoveSandbox(ctx, e, "", id)
			}
		}
		sb.Close()
		cancel()
		t.Logf("snapshots %d MiB (urandom), %d runs: sleep p50 %v p95 %v; wake p50 %v p95 %v; fork into 4 p50 %v p95 %v; disk asleep %.1f MiB",
			mib, runs, pct(sleeps, 50), pct(sleeps, 95), pct(wakes, 50), pct(wakes, 95), pct(forks, 50), pct(forks, 95), float64(disk)/(1<<20))
	}
}

// pct is the p-th percentile of ds (nearest rank), rounded to the ms.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(time.Millisecond)
}
