//go:build integration

package integration

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"
	"sort"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

func TestZZPhases(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		for _, lane := range []bool{false, true} {
			var lanes *entrypoint.Lanes
			if lane {
				lanes, _ = entrypoint.NewLanes(t.TempDir(), nil)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			spec := settings(t).SandboxSpec("zz", nil)
			s := entrypoint.New(connect(t, name), &entrypoint.Options{Spec: spec, Logger: log, Lanes: lanes})
			var d []time.Duration
			for i := range 301 {
				b := time.Now()
				s.Execute(context.Background(), "pass", 0)
				if i >= 100 {
					d = append(d, time.Since(b))
				}
			}
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			t.Logf("%s lane=%v p50 %v", name, lane, d[len(d)/2])
			s.Close()
		}
	}
}
