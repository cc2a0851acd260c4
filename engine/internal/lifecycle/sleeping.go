package lifecycle

import (
	"context"
	"strconv"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// asleep returns the containers that sleep (a stopped sandbox with its
// sleep checkpoint, engine.Snapshotter) and may sleep on at now: those
// whose sleep began less than their LabelSleepTTL ago. The clean-up
// spares them; an engine without snapshots has none.
func (e *Engine) asleep(ctx context.Context, now time.Time) map[string]bool {
	s, ok := e.api.(engine.Snapshotter)
	if !ok {
		return nil
	}
	list, err := s.Sleeping(ctx)
	if err != nil {
		return nil
	}
	keep := map[string]bool{}
	for _, c := range list {
		if SleepExpired(c, now) {
			continue
		}
		keep[c.ID] = true
	}
	return keep
}

// SleepExpired reports whether the sleeping sandbox c has slept past its
// LabelSleepTTL at now (a missing or malformed label: it has).
func SleepExpired(c engine.Sleeping, now time.Time) bool {
	ttl, err := strconv.ParseInt(c.Labels[engine.LabelSleepTTL], 10, 64)
	if err != nil || ttl <= 0 || c.Since.IsZero() {
		return true
	}
	return now.Sub(c.Since) > time.Duration(ttl)*time.Second
}
