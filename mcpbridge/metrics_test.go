package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// scrape returns the metrics the bridge's HTTP handler serves.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, MetricsPath, nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", MetricsPath, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// metricValue returns the value of the sample series (name and labels, as
// the text format writes them) in body, or -1 when there is none.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMetricsOfCalls(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	cs := hb.mustConnect(t)
	for _, code := range []string{"print('hello')", "x = 1", "raise ValueError('no')"} {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}}); err != nil {
			t.Fatal(err)
		}
	}
	body := scrape(t, hb.b.HTTPHandler(nil))
	for series, want := range map[string]float64{
		`mcp_bridge_calls_total{status="success"}`: 2,
		`mcp_bridge_calls_total{status="error"}`:   1,
		`mcp_bridge_call_duration_seconds_count`:   3,
		`mcp_bridge_sessions`:                      1,
		`mcp_bridge_pool_ready`:                    0,
	} {
		if got := metricValue(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := metricValue(t, body, `mcp_bridge_sandbox_starts_total{outcome="success"}`); got < 1 {
		t.Errorf("sandbox starts = %v, want ≥ 1", got)
	}
	if got := metricValue(t, body, `mcp_bridge_sandbox_start_phase_seconds_count{phase="init"}`); got < 1 {
		t.Errorf("init phases = %v, want ≥ 1", got)
	}
	if got := metricValue(t, body, `mcp_bridge_output_bytes_total{stream="stdout"}`); got < float64(len("hello")) {
		t.Errorf("stdout bytes = %v, want ≥ 5", got)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("no %s in the scrape", name)
		}
	}
}

func TestMetricsOfPoolStarts(t *testing.T) {
	t.Parallel()
	_, b := connectClient(t, Options{PoolSize: 1})
	h := b.HTTPHandler(nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := scrape(t, h)
		if metricValue(t, body, `mcp_bridge_pool_ready`) == 1 {
			// A scrape reads its collectors concurrently, not at one
			// instant: this one may have read the counter before the
			// start's last phase and the gauge after it. The start is
			// counted before the sandbox joins the pool, so a scrape
			// begun after this one sees it.
			body = scrape(t, h)
			if got := metricValue(t, body, `mcp_bridge_sandbox_starts_total{outcome="success"}`); got != 1 {
				t.Fatalf("pool starts = %v, want 1\n%s", got, body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool never filled:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMetricsOfProxiedCalls(t *testing.T) {
	t.Parallel()
	cs, b := connectClient(t, Options{Registry: stubRegistry(t)})
	if res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "print(await mcp_stub.echo(message='hi'))\ntry:\n    await mcp_stub.read_text_file(path='/x')\nexcept MCPError as e:\n    print(e)"}); res.IsError {
		t.Fatalf("proxied calls: %s", text)
	}
	body := scrape(t, b.HTTPHandler(nil))
	if got := metricValue(t, body, `mcp_bridge_proxied_calls_total{outcome="ok",server="stub",tool="echo"}`); got != 1 {
		t.Errorf("ok echo calls = %v, want 1\n%s", got, body)
	}
	if got := metricValue(t, body, `mcp_bridge_proxied_calls_total{outcome="error",server="stub",tool="read_text_file"}`); got != 1 {
		t.Errorf("failed read_text_file calls = %v, want 1", got)
	}
}

func TestProxiedLabelsAreBounded(t *testing.T) {
	m := newMetrics(nil, "v1.2.3", func() int { return 0 }, func() int { return 0 })
	for i := range 2 * maxProxiedLabels {
		m.proxiedCall("s"+strconv.Itoa(i), "t", "ok")
	}
	if n := len(m.proxiedTo); n > maxProxiedLabels+maxProxiedLabels/10+1 {
		t.Fatalf("%d label pairs", n)
	}
}

// An unpingableEngine starts nothing and answers no ping.
type unpingableEngine struct{ enginetest.Local }

func (unpingableEngine) Ping(context.Context) error { return errors.New("engine down") }

var _ engine.Pinger = unpingableEngine{}

func getHealth(t *testing.T, h http.Handler, method string, headers map[string]string) (*httptest.ResponseRecorder, healthReport) {
	t.Helper()
	req := httptest.NewRequest(method, HealthPath, nil)
	req.Host = "localhost"
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var rep healthReport
	if rec.Code == http.StatusOK || rec.Code == http.StatusServiceUnavailable {
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%d %q: %v", rec.Code, rec.Body, err)
		}
	}
	return rec, rep
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := newFixture(t, fixtureOptions{Options: Options{Version: "v1.2.3-test"}}).b
	h := b.HTTPHandler(nil)
	rec, rep := getHealth(t, h, http.MethodGet, nil)
	if rec.Code != http.StatusOK || rep.Status != "ok" || rep.Engine != "local" || rep.Sessions != 0 || rep.Version != "v1.2.3-test" {
		t.Fatalf("healthz: %d %+v", rec.Code, rep)
	}
	// The same version in the build-info series.
	if got := metricValue(t, scrape(t, h), `mcp_bridge_build_info{version="v1.2.3-test"}`); got != 1 {
		t.Fatalf("mcp_bridge_build_info of v1.2.3-test = %v, want 1", got)
	}
	if rec, _ := getHealth(t, h, http.MethodPost, nil); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST healthz: %d", rec.Code)
	}

	down := newFixture(t, fixtureOptions{Engine: unpingableEngine{enginetest.Local{T: t}}}).b
	rec, rep = getHealth(t, down.HTTPHandler(nil), http.MethodGet, nil)
	if rec.Code != http.StatusServiceUnavailable || rep.Status != "unavailable" || !strings.Contains(rep.Error, "engine down") {
		t.Fatalf("healthz of a failing engine: %d %+v", rec.Code, rep)
	}
}

func TestHealthAndMetricsNeedTheToken(t *testing.T) {
	t.Parallel()
	b := newFixture(t, fixtureOptions{}).b
	h := b.HTTPHandler(&HTTPOptions{Token: "s3cret"})
	for _, path := range []string{HealthPath, MetricsPath} {
		for _, auth := range []string{"", "Bearer wrong"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = "localhost"
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("GET %s with %q: %d", path, auth, rec.Code)
			}
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "localhost"
		req.Header.Set("Authorization", "Bearer s3cret")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s with the token: %d", path, rec.Code)
		}
	}
}

func TestConcurrentScrapes(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	client := hb.srv.Client()
	var wg sync.WaitGroup
	codes := make(chan int, 100)
	began := time.Now()
	for range 100 {
		wg.Go(func() {
			resp, err := client.Get(hb.srv.URL + MetricsPath)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable: // past MaxRequestsInFlight
		default:
			t.Errorf("status %d", c)
		}
	}
	if ok == 0 {
		t.Error("no scrape succeeded")
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("100 scrapes took %v", took)
	}
}

// A severalEngines reports two engines, as auto.Multi does.
type severalEngines struct{ enginetest.Local }

func (severalEngines) Engines() []engine.EngineState {
	return []engine.EngineState{
		{Name: "docker", Up: true, Sandboxes: 3},
		{Name: "docker@tcp://10.0.0.5:2376", Up: false, Error: "connection refused"},
	}
}

func TestHealthAndMetricsOfSeveralEngines(t *testing.T) {
	t.Parallel()
	b := newFixture(t, fixtureOptions{Engine: severalEngines{enginetest.Local{T: t}}}).b
	h := b.HTTPHandler(nil)
	rec, rep := getHealth(t, h, http.MethodGet, nil)
	if rec.Code != http.StatusOK || len(rep.Engines) != 2 || rep.Engines[1].Up || rep.Engines[1].Error != "connection refused" ||
		rep.Engines[0].Sandboxes != 3 {
		t.Fatalf("healthz: %d %+v", rec.Code, rep)
	}
	body := scrape(t, h)
	for series, want := range map[string]float64{
		`mcp_bridge_engine_up{engine="docker"}`:                            1,
		`mcp_bridge_engine_up{engine="docker@tcp://10.0.0.5:2376"}`:        0,
		`mcp_bridge_engine_sandboxes{engine="docker"}`:                     3,
		`mcp_bridge_engine_sandboxes{engine="docker@tcp://10.0.0.5:2376"}`: 0,
	} {
		if got := metricValue(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	// One engine: no engine series and no engines in the health report.
	one := newFixture(t, fixtureOptions{}).b
	if body := scrape(t, one.HTTPHandler(nil)); strings.Contains(body, "mcp_bridge_engine_up") {
		t.Fatal("a bridge on one engine reports engine_up")
	}
	if _, rep := getHealth(t, one.HTTPHandler(nil), http.MethodGet, nil); rep.Engines != nil {
		t.Fatalf("engines of one engine: %+v", rep.Engines)
	}
}

func TestOpenProbes(t *testing.T) {
	t.Parallel()
	b := newFixture(t, fixtureOptions{}).b
	h := b.HTTPHandler(&HTTPOptions{Token: "s3cret-token-0123456", OpenProbes: true})
	get := func(path, host string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, path := range []string{HealthPath, MetricsPath} {
		if code := get(path, "localhost"); code != http.StatusOK {
			t.Errorf("open probes: GET %s without the token: %d, want 200", path, code)
		}
	}
	// /mcp still needs it.
	req := httptest.NewRequest(http.MethodPost, HTTPPath, strings.NewReader(`{}`))
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("open probes: POST %s without the token: %d, want 401", HTTPPath, rec.Code)
	}
}

// TestHealthSaysTheLane: with fast lanes, /healthz says which path the
// engine's frames take once a sandbox started: none before, the lane
// after a call.
func TestHealthSaysTheLane(t *testing.T) {
	t.Parallel()
	lanes, err := entrypoint.NewLanes(filepath.Join(t.TempDir(), "lanes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOptions{Options: Options{Session: entrypoint.Options{Lanes: lanes}}})
	h := f.b.HTTPHandler(nil)
	if _, rep := getHealth(t, h, http.MethodGet, nil); len(rep.Lanes) != 0 {
		t.Fatalf("lanes before any sandbox: %+v", rep.Lanes)
	}
	cs := f.connectInMemory(t)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}})
	if err != nil || res.IsError {
		t.Fatalf("run_python: %+v %v", res, err)
	}
	if _, rep := getHealth(t, h, http.MethodGet, nil); rep.Lanes["local"].Path != "lane" {
		t.Fatalf("lanes after a call: %+v", rep.Lanes)
	}
}
