package mcpbridge

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// sleepersCacheFor is how long an answer of the engine about its
// sleeping sandboxes is reused: listing them inspects each.
const sleepersCacheFor = 10 * time.Second

// A sleepers tells how many sandboxes sleep on the engine and the disk
// their checkpoints hold (MCP_BRIDGE_SNAPSHOTS), for /healthz, the
// console and the metrics; it asks the engine at most every
// sleepersCacheFor. A nil sleepers (snapshots off) reports none.
type sleepers struct {
	eng engine.Engine

	mu    sync.Mutex
	at    time.Time
	count int
	bytes int64 // of those whose size the bridge can see
}

// read returns the sleeping sandboxes and their checkpoints' bytes.
func (s *sleepers) read() (int, int64) {
	if s == nil {
		return 0, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < sleepersCacheFor {
		return s.count, s.bytes
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.at = time.Now()
	sn, err := engine.As[engine.Snapshotter](ctx, s.eng)
	if err != nil {
		return s.count, s.bytes
	}
	list, err := sn.Sleeping(ctx)
	if err != nil {
		return s.count, s.bytes
	}
	s.count, s.bytes = len(list), 0
	for _, c := range list {
		s.bytes += max(c.Bytes, 0)
	}
	return s.count, s.bytes
}

// registerSleepers adds the gauges of s to m.
func (m *metrics) registerSleepers(s *sleepers) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: metricsPrefix + "sleeping_sandboxes",
			Help: "Sandboxes asleep on the engine (checkpointed, MCP_BRIDGE_SNAPSHOTS), read at most every 10 s.",
		}, func() float64 { n, _ := s.read(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: metricsPrefix + "sleeping_bytes",
			Help: "Disk the checkpoints of sleeping sandboxes hold, in bytes, read at most every 10 s.",
		}, func() float64 { _, b := s.read(); return float64(b) }),
	)
}
