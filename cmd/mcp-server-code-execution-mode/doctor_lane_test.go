package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// A laneEngine is a fakeEngine whose sandboxes but the probe run the real
// runtime as local processes; hidden hides from the runtime that it sees
// the host's files, so that the lane is offered at engine.LaneDir, which
// this host has not.
type laneEngine struct {
	*fakeEngine
	t      *testing.T
	hidden bool
}

func (e *laneEngine) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	if slices.Equal(spec.Cmd, probeCommand) {
		return e.fakeEngine.Start(ctx, spec)
	}
	sb, err := enginetest.Local{T: e.t}.Start(ctx, spec)
	if err != nil || !e.hidden {
		return sb, err
	}
	return struct{ engine.Sandbox }{sb}, nil
}

// TestDoctorLane: with MCP_BRIDGE_FAST_LANE=1, doctor starts a sandbox
// and says which path its frames take: the lane when the runtime reaches
// it, the stream and why when it does not; nothing without the setting.
func TestDoctorLane(t *testing.T) {
	for _, tt := range []struct {
		name   string
		hidden bool
		env    bool
		want   string // the lane check's status ("": no lane check)
		detail string
	}{
		{name: "reached", env: true, want: "ok", detail: "the frames travel the fast lane"},
		{name: "unreachable", hidden: true, env: true, want: "warn", detail: "the frames travel the engine's stream"},
		{name: "off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &laneEngine{fakeEngine: newFakeEngine(), t: t, hidden: tt.hidden}
			env := map[string]string{}
			if tt.env {
				env["MCP_BRIDGE_FAST_LANE"] = "1"
				env["MCP_BRIDGE_FAST_LANE_DIR"] = filepath.Join(t.TempDir(), "lanes")
			}
			out, errs := runDoctorOn(t, f, env)
			var lane map[string]any
			for _, r := range decodeReport(t, out) {
				if r["check"] == "lane" {
					lane = r
				}
			}
			if tt.want == "" {
				if lane != nil {
					t.Fatalf("a lane check without the setting: %v", lane)
				}
				return
			}
			if lane == nil || lane["status"] != tt.want || !strings.Contains(lane["detail"].(string), tt.detail) {
				t.Fatalf("the lane check: %v, want %s %q\nstderr %s", lane, tt.want, tt.detail, errs)
			}
		})
	}
}

// runDoctorOn runs `doctor --json` on eng as doctorWith does.
func runDoctorOn(t *testing.T, eng engine.Engine, env map[string]string) (string, string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	env = withPipWheel(t, env)
	var out, errb bytes.Buffer
	runDoctor(context.Background(), []string{"--json"}, &out, &errb, func(k string) string { return env[k] },
		func(*config.Config, *slog.Logger) (engine.Engine, func()) { return eng, func() {} })
	return out.String(), errb.String()
}
