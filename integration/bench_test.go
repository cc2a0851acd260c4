//go:build integration

package integration

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The benchmarks of BENCHMARKS.md. Each takes its fixed number of samples
// once, whatever b.N (run them with -benchtime 1x), reports p50/p95 as
// benchmark metrics and records its table in the report, which
// scripts/bench writes to BENCHMARKS.md with -args -report FILE: every
// figure comes from the same run on the same machine.

var reportPath = flag.String("report", "", "write the benchmark report (markdown) to this file after the run")

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if *reportPath != "" {
		if err := os.WriteFile(*reportPath, []byte(report.markdown()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "writing the report:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// stats summarizes latency samples.
type stats struct {
	n              int
	p50, p95, mean time.Duration
}

func summarize(samples []time.Duration) stats {
	if len(samples) == 0 {
		return stats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return stats{n: len(s), p50: at(0.50), p95: at(0.95), mean: sum / time.Duration(len(s))}
}

// ms formats d in milliseconds with a precision fit for its size.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// metrics reports s as benchmark metrics.
func (s stats) metrics(b *testing.B) {
	b.ReportMetric(float64(s.p50)/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(s.p95)/float64(time.Millisecond), "p95-ms")
}

// A variant is an engine and OCI runtime the benchmarks run on.
type variant struct {
	label, engine, oci string
}

// env returns the bridge environment selecting v.
func (v variant) env() []string {
	return []string{"MCP_BRIDGE_RUNTIME=" + v.engine, "MCP_BRIDGE_OCI_RUNTIME=" + v.oci}
}

// benchVariants lists the engines under test, plus Docker under gVisor
// when runsc is installed (MCP_BENCH_RUNSC=0 leaves it out).
func benchVariants() []variant {
	var out []variant
	for _, name := range engineNames() {
		out = append(out, variant{label: name, engine: name})
	}
	if _, err := exec.LookPath("runsc"); err == nil && os.Getenv("MCP_BENCH_RUNSC") != "0" && slices.Contains(engineNames(), "docker") {
		out = append(out, variant{label: "docker+runsc", engine: "docker", oci: "runsc"})
	}
	return out
}

// forEachVariant runs f as a sub-benchmark per variant.
func forEachVariant(b *testing.B, f func(b *testing.B, v variant)) {
	for _, v := range benchVariants() {
		b.Run(v.label, func(b *testing.B) { f(b, v) })
	}
}
