package mcpbridge

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

const metricsPrefix = "mcp_bridge_"

// maxProxiedLabels bounds the distinct (server, tool) pairs of
// proxied_calls_total; calls past it count under tool "other".
const maxProxiedLabels = 500

// metrics are the bridge's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg *prometheus.Registry

	calls        *prometheus.CounterVec
	callDuration prometheus.Histogram
	starts       *prometheus.CounterVec
	startPhases  *prometheus.HistogramVec
	proxied      *prometheus.CounterVec
	outputBytes  *prometheus.CounterVec
	egressConns  *prometheus.CounterVec
	egressBytes  *prometheus.CounterVec

	mu        sync.Mutex
	proxiedTo map[[2]string]bool // the (server, tool) label pairs in use
}

// durationBuckets are the upper bounds, in seconds, of the duration
// histograms: from a warm call to the longest timeout.
var durationBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// newMetrics registers the bridge's metrics, and the Go and process
// collectors, on a new registry: version is the build's (the build-info
// series); sessions and poolReady count the open client sessions and the
// pool's ready sandboxes; eng, when it is an engine over several, reports
// each one's state.
func newMetrics(eng engine.Engine, version string, sessions, poolReady func() int) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), proxiedTo: map[[2]string]bool{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "calls_total",
		Help: "run_python calls, by the status of their result.",
	}, []string{"status"})
	m.callDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    metricsPrefix + "call_duration_seconds",
		Help:    "Duration of run_python calls, queueing and sandbox start included.",
		Buckets: durationBuckets,
	})
	m.starts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "sandbox_starts_total",
		Help: "Sandbox starts (for calls and for the warm pool), by outcome.",
	}, []string{"outcome"})
	m.startPhases = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricsPrefix + "sandbox_start_phase_seconds",
		Help:    "Duration of the phases of sandbox starts.",
		Buckets: durationBuckets,
	}, []string{"phase"})
	m.proxied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "proxied_calls_total",
		Help: "Calls from sandboxes to proxied MCP servers' tools, by outcome.",
	}, []string{"server", "tool", "outcome"})
	m.outputBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "output_bytes_total",
		Help: "Bytes of run_python output, by stream.",
	}, []string{"stream"})
	m.egressConns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "egress_connections_total",
		Help: "Connections of sandbox code through the egress gateway, by outcome (allowed, denied, error).",
	}, []string{"outcome"})
	m.egressBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "egress_bytes_total",
		Help: "Bytes through the egress gateway, by direction (out: from sandboxes; in: to them).",
	}, []string{"direction"})
	sessionsGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricsPrefix + "sessions",
		Help: "MCP client sessions open.",
	}, func() float64 { return float64(sessions()) })
	poolGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricsPrefix + "pool_ready",
		Help: "Warm sandboxes ready in the pool.",
	}, func() float64 { return float64(poolReady()) })
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        metricsPrefix + "build_info",
		Help:        "The bridge's build: 1, labelled with its version (as `version` prints it).",
		ConstLabels: prometheus.Labels{"version": version},
	})
	buildInfo.Set(1)
	m.reg.MustRegister(m.calls, m.callDuration, m.starts, m.startPhases, m.proxied, m.outputBytes, m.egressConns, m.egressBytes, sessionsGauge, poolGauge,
		buildInfo, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if st, ok := eng.(engineStates); ok {
		m.reg.MustRegister(engineCollector{st})
	}
	return m
}

// An engineStates is an engine over several engines (auto.Multi, an
// engine.EngineStater) that reports the state of each.
type engineStates interface {
	Engines() []engine.EngineState
}

// Descriptions of the metrics of each engine of several.
var (
	engineUpDesc = prometheus.NewDesc(metricsPrefix+"engine_up",
		"1 when the engine answered its last start or ping, 0 while it backs off after failing to.",
		[]string{"engine"}, nil)
	engineSandboxesDesc = prometheus.NewDesc(metricsPrefix+"engine_sandboxes",
		"Sandboxes open on the engine, with starts under way.", []string{"engine"}, nil)
)

// An engineCollector collects the state of each engine of several.
type engineCollector struct{ st engineStates }

// Describe implements prometheus.Collector.
func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- engineUpDesc
	ch <- engineSandboxesDesc
}

// Collect implements prometheus.Collector.
func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.st.Engines() {
		up := 0.0
		if e.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(engineUpDesc, prometheus.GaugeValue, up, e.Name)
		ch <- prometheus.MustNewConstMetric(engineSandboxesDesc, prometheus.GaugeValue, float64(e.Sandboxes), e.Name)
	}
}

// call counts a run_python call that ended with status after took.
func (m *metrics) call(status string, took time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(status).Inc()
	m.callDuration.Observe(took.Seconds())
}

// output counts the output of a call's result.
func (m *metrics) output(res *entrypoint.Result) {
	if m == nil || res == nil {
		return
	}
	m.outputBytes.WithLabelValues("stdout").Add(float64(len(res.Stdout)))
	m.outputBytes.WithLabelValues("stderr").Add(float64(len(res.Stderr)))
}

// startTrace returns ctx with a StartTrace that observes the phases of a
// sandbox start and counts it as started when its last phase (init) ends,
// chained to the StartTrace ctx carries already, if any.
func (m *metrics) startTrace(ctx context.Context, next func(string, time.Duration)) context.Context {
	return engine.WithStartTrace(ctx, &engine.StartTrace{Phase: func(name string, took time.Duration) {
		if m != nil {
			m.startPhases.WithLabelValues(name).Observe(took.Seconds())
			if name == entrypoint.PhaseInit {
				m.starts.WithLabelValues("success").Inc()
			}
		}
		if next != nil {
			next(name, took)
		}
	}})
}

// startFailed counts err as a failed sandbox start, if it is one.
func (m *metrics) startFailed(err error) {
	if m != nil && errors.Is(err, entrypoint.ErrStart) {
		m.starts.WithLabelValues("failure").Inc()
	}
}

// proxiedCall counts a call to a proxied server's tool by its outcome
// (servers.Options.Counted: ok, error, cancelled or timeout).
func (m *metrics) proxiedCall(server, tool, outcome string) {
	if m == nil {
		return
	}
	key := [2]string{server, tool}
	m.mu.Lock()
	if !m.proxiedTo[key] {
		if len(m.proxiedTo) >= maxProxiedLabels {
			key = [2]string{server, "other"}
			if !m.proxiedTo[key] && len(m.proxiedTo) >= maxProxiedLabels+maxProxiedLabels/10 {
				key = [2]string{"other", "other"}
			}
		}
		m.proxiedTo[key] = true
	}
	m.mu.Unlock()
	m.proxied.WithLabelValues(key[0], key[1], outcome).Inc()
}

// Connection counts a connection through the egress gateway
// (egress.Metrics).
func (m *metrics) Connection(outcome string) { m.egressConns.WithLabelValues(outcome).Inc() }

// Bytes counts bytes through the egress gateway (egress.Metrics).
func (m *metrics) Bytes(dir string, n int64) { m.egressBytes.WithLabelValues(dir).Add(float64(n)) }
