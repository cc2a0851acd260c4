package mcpbridge

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Bounds of the health and metrics endpoints.
const (
	healthPingTimeout = 2 * time.Second // a ping of the engine
	healthCacheFor    = time.Second     // a ping's answer is reused this long
	metricsInFlight   = 4               // scrapes served at once; more get 503
)

// Paths of the health and metrics endpoints.
const (
	HealthPath  = "/healthz"
	MetricsPath = "/metrics"
)

// A healthCache holds the engine's last answer to a ping, so that
// frequent probes ping it at most once per healthCacheFor.
type healthCache struct {
	mu  sync.Mutex // held while pinging: concurrent probes share a ping
	at  time.Time
	err error
}

// engineHealth pings the engine (when it can be pinged), or returns the
// answer of a ping less than healthCacheFor old.
func (b *Bridge) engineHealth(ctx context.Context) error {
	p, ok := b.eng.(engine.Pinger)
	if !ok {
		if b.eng == nil {
			return engine.ErrNoEngine
		}
		return nil // nothing to ask: it answers when it starts sandboxes
	}
	h := &b.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.at.IsZero() && time.Since(h.at) < healthCacheFor {
		return h.err
	}
	ctx, cancel := context.WithTimeout(ctx, healthPingTimeout)
	defer cancel()
	h.err = p.Ping(ctx)
	h.at = time.Now()
	return h.err
}

// engineName names the bridge's engine for the health report.
func (b *Bridge) engineName() string {
	if n, ok := b.eng.(interface{ Name() string }); ok {
		return n.Name()
	}
	if b.eng == nil {
		return "none"
	}
	t := reflect.TypeOf(b.eng)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.ToLower(t.Name())
}

// A healthReport is the body of a /healthz answer.
type healthReport struct {
	Status    string `json:"status"` // "ok" or "unavailable"
	Engine    string `json:"engine"`
	Error     string `json:"error,omitempty"`
	Sessions  int    `json:"sessions"`
	PoolReady int    `json:"pool_ready"`
	PoolSize  int    `json:"pool_size"`
	// Engines is the state of each engine when there are several.
	Engines []engine.EngineState `json:"engines,omitempty"`
}

// serveHealth answers a health probe: 200 when the engine answers, 503
// when it does not.
func (b *Bridge) serveHealth(w http.ResponseWriter, r *http.Request) {
	rep := healthReport{Status: "ok", Sessions: b.sessionCount(), PoolReady: b.pool.readyCount()}
	if b.pool != nil {
		rep.PoolSize = b.pool.size
	}
	status := http.StatusOK
	if err := b.engineHealth(r.Context()); err != nil {
		rep.Status, rep.Error, status = "unavailable", err.Error(), http.StatusServiceUnavailable
	}
	rep.Engine = b.engineName() // after the ping, which may connect it
	if st, ok := b.eng.(engineStates); ok {
		rep.Engines = st.Engines()
	}
	body, _ := json.Marshal(rep)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(append(body, '\n'))
	}
}

// metricsHandler serves the bridge's metrics, a few scrapes at a time.
func (b *Bridge) metricsHandler() http.Handler {
	return promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: metricsInFlight,
		Timeout:             10 * time.Second,
	})
}

// guarded serves h behind the guard of f, for GET and HEAD only.
func (f *httpFront) guarded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.refused(w, r, !f.opts.OpenProbes) {
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeHTTPError(w, http.StatusMethodNotAllowed, "method not allowed: use GET or HEAD")
			return
		}
		h.ServeHTTP(w, r)
	})
}
