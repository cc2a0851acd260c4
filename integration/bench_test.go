//go:build integration

package integration

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The benchmarks of BENCHMARKS.md. Each is an ordinary Go benchmark: its
// measured loop runs b.N times the one thing it measures (a warm call, a
// fresh container, a proxied call, a new session, a bridge start...),
// set-up and warm-up outside the timer, so
//
//	go test -tags "$(cat engine/podman_tags.txt) integration" -run '^$' \
//		-bench 'WarmCall$' -benchtime 2s ./integration/
//
// gives a real ns/op. Every iteration is also kept as a sample: each
// benchmark reports p50/p95 as metrics and records its table in the
// report, so a table's sample count is its benchmark's b.N. The memory and
// token figures are not latencies: there the op is the whole measurement,
// and its ns/op only says how long that took.
//
// scripts/bench writes BENCHMARKS.md's generated part with -args -report FILE -benchplan
// PLAN: PLAN gives each benchmark its own iteration count, and TestMain
// runs the steps one after the other in this one process, so every figure
// of the report comes from the same run on the same machine.

var (
	reportPath   = flag.String("report", "", "write the benchmark report (markdown) to this file after the run")
	searchReport = flag.String("searchreport", "", "a markdown section to add to the report: the tool search's, "+
		"written by the mcpbridge package's TestSearchReport (scripts/bench runs it first)")
	benchPlan = flag.String("benchplan", "", "run the benchmarks in steps, space-separated `PATTERN=BENCHTIME` pairs "+
		"(such as 'WarmCall$=200x FreshContainer$=10x'): each step runs the benchmarks -test.bench PATTERN selects "+
		"with -test.benchtime BENCHTIME (overriding both flags), tests only in the first step")
)

func TestMain(m *testing.M) {
	if serveFloor() || serveShapes() {
		return
	}
	flag.Parse()
	var code int
	if *benchPlan == "" {
		code = m.Run()
	} else {
		code = runPlan(m, *benchPlan)
	}
	if err := stopTLSDaemon(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the TLS Docker daemon:", err)
		code = max(code, 1)
	}
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if *reportPath != "" {
		if err := writeReport(*reportPath); err != nil {
			fmt.Fprintln(os.Stderr, "writing the report:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// A planStep runs the benchmarks pattern selects for benchtime.
type planStep struct{ pattern, benchtime string }

func parsePlan(plan string) ([]planStep, error) {
	var steps []planStep
	for _, f := range strings.Fields(plan) {
		i := strings.LastIndexByte(f, '=')
		if i <= 0 || i == len(f)-1 {
			return nil, fmt.Errorf("-benchplan: %q is not PATTERN=BENCHTIME", f)
		}
		steps = append(steps, planStep{f[:i], f[i+1:]})
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("-benchplan: no steps")
	}
	return steps, nil
}

// runPlan runs m once per step of plan, setting -test.bench and
// -test.benchtime for it; the tests -test.run selects run in the first
// step only. It returns the worst exit code.
func runPlan(m *testing.M, plan string) int {
	steps, err := parsePlan(plan)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	code := 0
	for i, s := range steps {
		if i > 0 {
			flag.Set("test.run", "^$")
		}
		for name, value := range map[string]string{"test.bench": s.pattern, "test.benchtime": s.benchtime} {
			if err := flag.Set(name, value); err != nil {
				fmt.Fprintf(os.Stderr, "-benchplan: %s=%s: %v\n", s.pattern, s.benchtime, err)
				return 2
			}
		}
		code = max(code, m.Run())
	}
	return code
}

// stats summarizes latency samples.
type stats struct {
	n                        int
	p50, p95, p99, max, mean time.Duration
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
	return stats{n: len(s), p50: at(0.50), p95: at(0.95), p99: at(0.99), max: s[len(s)-1], mean: sum / time.Duration(len(s))}
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

// loopSamples runs sample warmup times untimed, then once per b.Loop
// iteration; it reports the samples' statistics as metrics and returns
// them. sample returns the duration of what it measures.
func loopSamples(b *testing.B, warmup int, sample func() time.Duration) stats {
	for range warmup {
		sample()
	}
	var samples []time.Duration
	for b.Loop() {
		samples = append(samples, sample())
	}
	st := summarize(samples)
	st.metrics(b)
	return st
}

// metrics reports s as benchmark metrics.
func (s stats) metrics(b *testing.B) {
	b.ReportMetric(float64(s.p50)/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(s.p95)/float64(time.Millisecond), "p95-ms")
}
