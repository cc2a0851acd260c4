package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestRoutesResult: no route out is ok; a route out that a deny-all
// egress policy covers warns that enforcement is not verified; a route
// out without one, or with a policy allowing egress, fails naming the
// route; an error fails.
func TestRoutesResult(t *testing.T) {
	for _, tt := range []struct {
		name   string
		e      engine.KubeEgress
		err    error
		status string
		want   []string
	}{
		{"no route out", engine.KubeEgress{Verdict: engine.KubeNoRouteOut}, nil, statusOK, []string{"pods have no route out"}},
		{"denied", engine.KubeEgress{Verdict: engine.KubeEgressDenied, Routes: []string{"eth0 default via 10.88.0.1"},
			Denying: []string{"mcp-sandbox-deny-all"}}, nil, statusWarn,
			[]string{"a route out (eth0 default via 10.88.0.1)", "a NetworkPolicy denies egress (mcp-sandbox-deny-all)",
				"whether the cluster's network plugin enforces it is not verified"}},
		{"open", engine.KubeEgress{Verdict: engine.KubeEgressOpen, Routes: []string{"eth0 default via 10.88.0.1", "eth0 default via fe80::1"}},
			nil, statusFail, []string{"a route out (eth0 default via 10.88.0.1, eth0 default via fe80::1)", "no NetworkPolicy denies them egress"}},
		{"open through an allowing policy", engine.KubeEgress{Verdict: engine.KubeEgressOpen, Routes: []string{"eth0 default via 10.88.0.1"},
			Denying: []string{"mcp-sandbox-deny-all"}, Allowing: []string{"dns"}}, nil, statusFail,
			[]string{"eth0 default via 10.88.0.1", "policies selecting them allow egress (dns)"}},
		{"an error", engine.KubeEgress{}, errors.New(`listing network policies: forbidden`), statusFail,
			[]string{"checking the sandbox pods' routes: listing network policies: forbidden"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := routesResult(tt.e, tt.err)
			if r.Check != "routes" || r.Status != tt.status {
				t.Fatalf("%+v; want routes, %s", r, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Detail, w) {
					t.Errorf("detail %q lacks %q", r.Detail, w)
				}
			}
			if r.Status != statusOK && r.Hint == "" {
				t.Errorf("no hint: %+v", r)
			}
			if !slices.Equal(r.Routes, tt.e.Routes) {
				t.Errorf("routes %q; want %q", r.Routes, tt.e.Routes)
			}
		})
	}
}

// A fakePods is a fakeEngine whose sandboxes are pods.
type fakePods struct {
	*fakeEngine
	egress engine.KubeEgress
	err    error
	spec   engine.Spec
}

func (f *fakePods) CheckEgress(_ context.Context, spec engine.Spec) (engine.KubeEgress, error) {
	f.spec = spec
	return f.egress, f.err
}

// TestDoctorPods: on an engine whose sandboxes are pods, doctor warns
// that the image cannot be looked up, skips the probe and the runtime,
// and checks the pods' routes with the settings' sandbox; a way out
// fails the run.
func TestDoctorPods(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    engine.KubeEgress
		code int
		want string
	}{
		{"no route out", engine.KubeEgress{}, 0, "routes=ok"},
		{"a route out", engine.KubeEgress{Verdict: engine.KubeEgressOpen, Routes: []string{"eth0 default via 10.0.0.1"}}, 1, "routes=fail"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakePods{fakeEngine: newFakeEngine(), egress: tt.e}
			f.info = engine.Info{Backend: engine.BackendKubernetes, Version: "v1.34.4", APIVersion: "1.34", Address: "https://127.0.0.1:6443"}
			t.Setenv("HOME", t.TempDir())
			t.Chdir(t.TempDir())
			env := withPipWheel(t, map[string]string{"MCP_BRIDGE_RUNTIME": "kubernetes"})
			var out, errb bytes.Buffer
			code := runDoctor(context.Background(), []string{"-json"}, &out, &errb, func(k string) string { return env[k] },
				func(*config.Config, *slog.Logger) (engine.Engine, func()) { return f, func() {} })
			got := statuses(decodeReport(t, out.String()))
			want := []string{"settings=ok", "engine=ok", "image=warn", "hardening=skip", "runtime=skip", tt.want}
			if code != tt.code || !slices.Equal(got[:len(want)], want) {
				t.Fatalf("code %d, checks %v; want %d, %v\n%s", code, got, tt.code, want, errb.String())
			}
			if f.started.Load() != 0 || f.spec.Session != "doctor" || !slices.Equal(f.spec.Cmd, probeCommand) {
				t.Errorf("probes started %d, spec %+v", f.started.Load(), f.spec)
			}
		})
	}
}
