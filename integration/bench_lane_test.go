//go:build integration

package integration

import (
	"context"
	"fmt"
	"time"

	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// fileOutBytes is the size of BenchmarkFileOut's file.
const fileOutBytes = 48 << 20

// BenchmarkFileOut is a 48 MiB file out of /workspace/out read back by
// the host (what resources/read of a file link does): through the
// engine's archive API on the stream variants, over the fast lane on the
// +lane ones. One op is one read of the whole file.
func BenchmarkFileOut(b *testing.B) {
	sec := report.section("24f", "A 48 MiB file out of `/workspace/out` read back by the host",
		"variant", "path", "reads", "p50", "MiB/s at p50")
	sec.note("After 1 warm-up read of the same file.")
	forEachVariant(b, func(b *testing.B, v variant) {
		s := benchSession(b, v, "bench-file-out")
		ctx := context.Background()
		res, err := s.Execute(ctx, fmt.Sprintf("open('/workspace/out/big.bin', 'wb').write(b'x' * %d)", fileOutBytes), time.Minute)
		if err != nil || res.Status != entrypoint.StatusSuccess {
			b.Fatalf("writing the file: %+v %v", res, err)
		}
		st := loopSamples(b, 1, func() time.Duration {
			began := time.Now()
			data, err := s.ReadFile(ctx, engine.OutDir, "big.bin", 64<<20)
			if err != nil || len(data) != fileOutBytes {
				b.Fatalf("reading: %d bytes, %v", len(data), err)
			}
			return time.Since(began)
		})
		path := "the engine's archive API"
		if v.lane {
			path = "the fast lane"
		}
		sec.row(v.label, v.label, path, fmt.Sprint(st.n), ms(st.p50), fmt.Sprintf("%.0f", float64(fileOutBytes>>20)/st.p50.Seconds()))
	})
}
