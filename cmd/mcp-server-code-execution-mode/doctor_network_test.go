package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
)

// fakeNames answers names from a table: nothing is looked up for real.
type fakeNames map[string][]netip.Addr

func (f fakeNames) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestDoctorNetwork: the network check says what the section holds, the
// addresses of each allowed name and which of them the gateway would
// refuse; a broken policy fails the check.
func TestDoctorNetwork(t *testing.T) {
	names := fakeNames{
		"api.example.test":      {netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("192.0.2.1")},
		"public.example.test":   {netip.MustParseAddr("8.8.4.4")},
		"internal.example.test": {netip.MustParseAddr("10.1.2.3")},
	}
	for _, tt := range []struct {
		name, policy, status string
		want                 []string
	}{
		{"no policy", "", "ok", []string{"no network section"}},
		{"reachable", `{"network": {"allow": ["public.example.test"]}}`, "ok", []string{"1 allow entries", "public.example.test:443 → 8.8.4.4"}},
		{"a private address", `{"network": {"allow": ["internal.example.test:8080", "public.example.test"]}}`, "warn",
			[]string{"internal.example.test:8080 (10.1.2.3) would be refused", "public.example.test:443 → 8.8.4.4"}},
		{"unresolvable", `{"network": {"allow": ["gone.example.test"]}}`, "warn", []string{"gone.example.test:443 does not resolve"}},
		{"documentation addresses", `{"network": {"allow": ["api.example.test"]}}`, "warn", []string{"(203.0.113.9) would be refused", "(192.0.2.1) would be refused"}},
		{"broken", `{"network": {"allow": [1]}}`, "fail", []string{"policy"}},
		{"a missing secret", `{"network": {"allow": ["public.example.test"], "inject": [{"host": "public.example.test", "header": "Authorization", "value": "Bearer ${MCP_DOCTOR_TEST_NEVER_SET}"}]}}`,
			"warn", []string{"disabled (their hosts are refused): inject[0] (public.example.test Authorization): the environment variable MCP_DOCTOR_TEST_NEVER_SET is not set",
				"public.example.test:443 (8.8.4.4) would be refused: public.example.test:443: the inject rule"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"MCP_BRIDGE_STATE_DIR": dir}
			if tt.policy != "" {
				path := filepath.Join(dir, "policy.json")
				if err := os.WriteFile(path, []byte(tt.policy), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := config.Load(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			var got []checkResult
			d := &doctor{stderr: io.Discard, log: slog.New(slog.DiscardHandler), resolver: names, report: func(r checkResult) { got = append(got, r) }}
			d.checkNetwork(context.Background(), cfg)
			if len(got) != 1 || got[0].Check != "network" || got[0].Status != tt.status {
				t.Fatalf("results %+v; want one network check, %s", got, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0].Detail, w) {
					t.Errorf("detail %q lacks %q", got[0].Detail, w)
				}
			}
			var out bytes.Buffer
			printResult(&out, got[0])
			if !strings.Contains(out.String(), "network") {
				t.Errorf("printed %q", out.String())
			}
		})
	}
}
