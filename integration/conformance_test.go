//go:build integration

package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// conformanceScenarios are the server scenarios of the official MCP
// conformance suite (@modelcontextprotocol/conformance 0.1.16, pinned in
// integration/conformance) that `serve -http` must pass on protocol
// 2025-11-25.
var conformanceScenarios = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list", "resources-list",
	"server-sse-multiple-streams", "dns-rebinding-protection",
}

// conformanceScenarios2026 are the server scenarios of the suite's next
// line (0.2.0-alpha.12, pinned in integration/conformance-next) that
// `serve -http` must pass on protocol 2026-07-28. The others call the
// suite's own fixture tools and prompts, or tools annotated with
// x-mcp-header.
var conformanceScenarios2026 = []string{
	"server-stateless", "http-header-validation", "caching", "tools-list", "resources-list",
	"prompts-list", "server-sse-multiple-streams", "dns-rebinding-protection",
	"sep-2164-resource-not-found",
}

// conformanceScenariosTasks are the suite's scenarios of the Tasks
// extension whose checks any server can pass; scripts/conformance counts
// their checks that call the suite's fixture tools as not applicable.
var conformanceScenariosTasks = []string{"tasks-capability-negotiation", "tasks-dispatch-and-envelope", "tasks-request-headers"}

var (
	conformanceSummary = regexp.MustCompile(`conformance: (\d+) passed, (\d+) failed`)
	// conformanceNA matches the lines of the checks scripts/conformance
	// counts as not applicable.
	conformanceNA = regexp.MustCompile(`(?m)^\s+N/A .*$`)
)

// TestHTTPConformance runs the conformance suite's server scenarios
// against the binary's Streamable HTTP server on one engine, through
// scripts/conformance (which runs the suite on the Node.js 22 pinned
// beside it): those of protocol 2025-11-25 with suite 0.1.16, then those
// of 2026-07-28 with suite 0.2.0-alpha.12, against the same bridge. The
// suite opens 2025-11-25 sessions it never deletes; they idle out. No
// token: dns-rebinding-protection expects its same-host request to be
// served.
func TestHTTPConformance(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=60"}})
		t.Run("2025-11-25", func(t *testing.T) {
			runConformance(t, script, b.url, nil, conformanceScenarios)
		})
		t.Run("2026-07-28", func(t *testing.T) {
			runConformance(t, script, b.url, []string{"--spec", "2026-07-28"}, conformanceScenarios2026)
		})
		t.Run("tasks", func(t *testing.T) {
			runConformance(t, script, b.url, []string{"--spec", "tasks"}, conformanceScenariosTasks)
		})
	})
}

// runConformance runs scripts/conformance with opts against url and
// asserts that every one of scenarios passed. It logs the checks the
// script counted as not applicable.
func runConformance(t *testing.T, script, url string, opts, scenarios []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append(append(append([]string{}, opts...), url), scenarios...)
	out, err := exec.CommandContext(ctx, script, args...).CombinedOutput()
	text := string(out)
	m := conformanceSummary.FindStringSubmatch(text)
	if err != nil || m == nil || m[2] != "0" || m[1] != strconv.Itoa(len(scenarios)) {
		t.Fatalf("conformance suite %v against %s: %v\n%s", opts, url, err, text)
	}
	for _, s := range scenarios {
		if !strings.Contains(text, "PASS "+s+" ") {
			t.Errorf("scenario %s did not pass:\n%s", s, text)
		}
	}
	for _, na := range conformanceNA.FindAllString(text, -1) {
		t.Logf("%s", strings.TrimSpace(na))
	}
	t.Logf("%s", strings.TrimSpace(m[0]))
}
