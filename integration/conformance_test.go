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
// conformance suite (@modelcontextprotocol/conformance, pinned in
// integration/conformance) that `serve -http` must pass.
var conformanceScenarios = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list", "resources-list",
	"server-sse-multiple-streams", "dns-rebinding-protection",
}

var conformanceSummary = regexp.MustCompile(`conformance: (\d+) passed, (\d+) failed`)

// TestHTTPConformance runs the conformance suite's server scenarios
// against the binary's Streamable HTTP server on each engine, through
// scripts/conformance (which runs the suite on the Node.js 22 pinned
// beside it). The suite opens sessions it never deletes; they idle out.
// No token: dns-rebinding-protection expects its same-host request to
// be served.
func TestHTTPConformance(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "scripts", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	forEachEngine(t, func(t *testing.T, e testEngine) {
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=60"}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, append([]string{b.url}, conformanceScenarios...)...)
		out, err := cmd.CombinedOutput()
		text := string(out)
		m := conformanceSummary.FindStringSubmatch(text)
		if err != nil || m == nil || m[2] != "0" || m[1] != strconv.Itoa(len(conformanceScenarios)) {
			t.Fatalf("conformance suite against %s: %v\n%s", b.url, err, text)
		}
		for _, s := range conformanceScenarios {
			if !strings.Contains(text, "PASS "+s+" ") {
				t.Errorf("scenario %s did not pass:\n%s", s, text)
			}
		}
		t.Logf("%s", strings.TrimSpace(m[0]))
	})
}
