//go:build integration

package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHTTPHealthAndMetrics checks /healthz and /metrics of the binary's
// HTTP server on a real engine: behind the token, the engine named and
// reachable, the pool's state, and the Prometheus counters of a call and
// of the sandbox starts; and JSON logs with the call's ids.
func TestHTTPHealthAndMetrics(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-ops-token"
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
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

// TestHTTPMetricsScrapedOften scrapes /metrics and /healthz 100 times a
// second while a session runs calls, until 300 scrapes are answered: every
// scrape is answered (200, or 503 when too many are in flight), the calls
// are unaffected, and the bridge's memory stays bounded.
func TestHTTPMetricsScrapedOften(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_HTTP_TOKEN=0123456789abcdef-scrape",
			"MCP_BRIDGE_HTTP_OPEN_PROBES=1"}})
		base := strings.TrimSuffix(b.url, "/mcp")
		client := b.httpClient("") // open probes: no token
		cs := b.session(t, nil)
		runPython(t, cs, map[string]any{"code": "n = 0"})
		rssBefore := rssBytes(t, b.pid)
		stop := make(chan struct{})
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				path := "/metrics"
				if i%10 == 0 {
					path = "/healthz"
				}
				wg.Go(func() {
					code := 0
					if resp, err := client.Get(base + path); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code = resp.StatusCode
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
				})
			}
		})
		for i := range 10 {
			if text, isErr := runPython(t, cs, map[string]any{"code": "n += 1\nprint(n)"}); isErr || text != strconv.Itoa(i+1) {
				t.Errorf("call %d during scrapes: %q", i, text)
			}
		}
		// Scraped on until 300 are answered, however slowly a loaded
		// machine answers them.
		waitFor(t, 2*time.Minute, "300 scrapes answered", func() bool {
			mu.Lock()
			defer mu.Unlock()
			total := 0
			for _, n := range codes {
				total += n
			}
			return total >= 300
		})
		close(stop)
		wg.Wait()
		total := 0
		for code, n := range codes {
			total += n
			if code != http.StatusOK && code != http.StatusServiceUnavailable {
				t.Errorf("%d scrapes answered %d", n, code)
			}
		}
		if grew := rssBytes(t, b.pid) - rssBefore; grew > 64<<20 {
			t.Errorf("the bridge's RSS grew by %d MiB during %d scrapes", grew>>20, total)
		}
		t.Logf("%d scrapes: %v", total, codes)
	})
}
