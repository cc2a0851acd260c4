//go:build integration

package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// reportPercentiles adds p50 and p95 of the samples, in milliseconds.
func reportPercentiles(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[int(q*float64(len(samples)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
}

// BenchmarkWarmExecute measures one call of `pass` on a warm session: the
// round trip over the attached streams that every run_python call costs.
func BenchmarkWarmExecute(b *testing.B) {
	for _, name := range engineNames() {
		b.Run(name, func(b *testing.B) {
			e := connect(b, name)
			s := entrypoint.New(entrypoint.Options{Engine: e, Spec: benchSpec(b), Logger: testLogger()})
			defer s.Close()
			ctx := context.Background()
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			for range 20 { // warm-up
				s.Execute(ctx, "pass", 0)
			}
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				res, err := s.Execute(ctx, "pass", 0)
				samples = append(samples, time.Since(start))
				if err != nil || res.Status != entrypoint.StatusSuccess {
					b.Fatalf("%+v %v", res, err)
				}
			}
			b.StopTimer()
			reportPercentiles(b, samples)
		})
	}
}

// BenchmarkNewSession measures the first call of a new client: container
// create, attach, start, interpreter start, runtime delivery and
// handshake, then `pass`. The image is cached; no pool is used.
func BenchmarkNewSession(b *testing.B) {
	for _, name := range engineNames() {
		b.Run(name, func(b *testing.B) {
			e := connect(b, name)
			ctx := context.Background()
			samples := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				s := entrypoint.New(entrypoint.Options{Engine: e, Spec: benchSpec(b), Logger: testLogger()})
				res, err := s.Execute(ctx, "pass", 0)
				samples = append(samples, time.Since(start))
				if err != nil || res.Status != entrypoint.StatusSuccess {
					b.Fatalf("%+v %v", res, err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			reportPercentiles(b, samples)
		})
	}
}

func benchSpec(b *testing.B) engine.Spec {
	return settings(b).Spec("bench", nil)
}
