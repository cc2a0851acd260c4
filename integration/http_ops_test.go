//go:build integration

package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHTTPHealthAndMetrics checks /healthz and /metrics of the binary's
// HTTP server on a real engine: behind the token, the engine named and
// reachable, the pool's state, and the Prometheus counters of a call and
// of the sandbox starts; and JSON logs with the call's ids.
func TestHTTPHealthAndMetrics(t *testing.T) {
	const token = "0123456789abcdef-ops-token"
	forEachEngine(t, func(t *testing.T, e testEngine) {
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_HTTP_TOKEN=" + token, "MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_LOG_LEVEL=DEBUG"}})
		base := strings.TrimSuffix(b.url, "/mcp")
		get := func(path, tok string) (int, string) {
			t.Helper()
			resp, err := b.httpClient(tok).Get(base + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		for _, path := range []string{"/healthz", "/metrics"} {
			if code, _ := get(path, ""); code != http.StatusUnauthorized {
				t.Errorf("GET %s without the token: %d, want 401", path, code)
			}
		}
		var h struct {
			Status    string `json:"status"`
			Engine    string `json:"engine"`
			PoolReady int    `json:"pool_ready"`
			PoolSize  int    `json:"pool_size"`
		}
		var code int
		var body string
		waitFor(t, time.Minute, "/healthz to report the spare ready", func() bool {
			code, body = get("/healthz", token)
			err := json.Unmarshal([]byte(body), &h)
			if code != http.StatusOK || err != nil || h.Status != "ok" || h.PoolSize != 1 || !strings.Contains(h.Engine, e.Name()) {
				t.Fatalf("GET /healthz: %d %s (%v)", code, body, err)
			}
			return h.PoolReady == 1
		})
		cs := b.session(t, nil)
		if text, isErr := runPython(t, cs, map[string]any{"code": "print(6*7)"}); isErr || text != "42" {
			t.Fatalf("call: %q", text)
		}
		runPython(t, cs, map[string]any{"code": "raise ValueError('counted')"})
		code, body = get("/metrics", token)
		for _, want := range []string{
			`mcp_bridge_calls_total{status="success"} 1`,
			`mcp_bridge_calls_total{status="error"} 1`,
			`mcp_bridge_sessions 1`,
			`mcp_bridge_call_duration_seconds_count 2`,
		} {
			if code != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("GET /metrics: %d, no %q in:\n%.3000s", code, want, body)
			}
		}
		if !regexp.MustCompile(`mcp_bridge_sandbox_starts_total\{outcome="success"\} [1-9]`).MatchString(body) {
			t.Errorf("no successful sandbox start counted:\n%.3000s", body)
		}
		if log := b.log.String(); !regexp.MustCompile(`msg="run_python answered" session=session-\d+ call=\d+ mcp_session=\S+ status=success`).MatchString(log) {
			t.Errorf("no log line of the call with its session, call and MCP session ids:\n%.4000s", b.log.tail(4000))
		}
	})
}
