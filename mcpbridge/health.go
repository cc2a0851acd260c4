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
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/httpserve"
)

// Bounds of the health and metrics endpoints.
const (
	healthPingTimeout = 2 * time.Second // a ping of the engine
	healthCacheFor    = time.Second     // a ping's answer is reused this long
	metricsInFlight   = 4               // scrapes served at once; more get 503
)

// Paths of the health and metrics endpoints.
const (
	HealthPath  = httpserve.HealthPath
	MetricsPath = httpserve.MetricsPath
)

// A healthCheck answers health probes: the engine's state (a ping's
// answer reused for healthCacheFor, so that frequent probes ping it at
// most that often), the sessions open and the pool's sandboxes.
type healthCheck struct {
	eng      engine.Engine
	pool     *sandboxPool      // nil: none
	sessions func() int        // the client sessions open
	version  string            // the build's
	lanes    *entrypoint.Lanes // nil: no fast lanes
	sleepers *sleepers         // nil: snapshots off

	mu  sync.Mutex // held while pinging: concurrent probes share a ping
	at  time.Time
	err error
}

// engineHealth pings the engine (when it can be pinged), or returns the
// answer of a ping less than healthCacheFor old.
func (h *healthCheck) engineHealth(ctx context.Context) error {
	p, ok := h.eng.(engine.Pinger)
	if !ok {
		if h.eng == nil {
			return engine.ErrNoEngine
		}
		return nil // nothing to ask: it answers when it starts sandboxes
	}
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

// engineName names the engine for the health report.
func (h *healthCheck) engineName() string {
	if n, ok := h.eng.(interface{ Name() string }); ok {
		return n.Name()
	}
	if h.eng == nil {
		return "none"
	}
	t := reflect.TypeOf(h.eng)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.ToLower(t.Name())
}

// A healthReport is the body of a /healthz answer.
type healthReport struct {
	Status    string `json:"status"` // "ok" or "unavailable"
	Version   string `json:"version"`
	Engine    string `json:"engine"`
	Error     string `json:"error,omitempty"`
	Sessions  int    `json:"sessions"`
	PoolReady int    `json:"pool_ready"`
	PoolSize  int    `json:"pool_size"`
	// Engines is the state of each engine when there are several.
	Engines []engine.EngineState `json:"engines,omitempty"`
	// Lanes says, with MCP_BRIDGE_FAST_LANE, which path each engine's
	// frames take, once a sandbox of it started.
	Lanes map[string]entrypoint.LaneStatus `json:"lanes,omitempty"`
	// Sleeping and SleepingBytes are, with MCP_BRIDGE_SNAPSHOTS, the
	// sandboxes asleep on the engine and the disk their checkpoints hold.
	Sleeping      *int   `json:"sleeping,omitempty"`
	SleepingBytes *int64 `json:"sleeping_bytes,omitempty"`
}

// ServeHTTP answers a health probe: 200 when the engine answers, 503
// when it does not.
func (h *healthCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := healthReport{Status: "ok", Version: h.version, Sessions: h.sessions(), PoolReady: h.pool.readyCount()}
	if h.pool != nil {
		rep.PoolSize = h.pool.size
	}
	status := http.StatusOK
	if err := h.engineHealth(r.Context()); err != nil {
		rep.Status, rep.Error, status = "unavailable", err.Error(), http.StatusServiceUnavailable
	}
	rep.Engine = h.engineName() // after the ping, which may connect it
	if st, ok := h.eng.(engineStates); ok {
		rep.Engines = st.Engines()
	}
	if h.sleepers != nil {
		n, bytes := h.sleepers.read()
		rep.Sleeping, rep.SleepingBytes = &n, &bytes
	}
	if h.lanes != nil {
		rep.Lanes = h.lanes.Status()
		if st, ok := rep.Lanes[""]; ok {
			delete(rep.Lanes, "")
			rep.Lanes[rep.Engine] = st
		}
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

// metricsHandler serves m, a few scrapes at a time.
func metricsHandler(m *metrics) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: metricsInFlight,
		Timeout:             10 * time.Second,
	})
}
