package lifecycle

import (
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestSleepExpired: a sleeping sandbox is spared until its label's
// seconds have passed since it went to sleep; a missing, malformed or
// zero label, or an unknown start, spares it not at all.
func TestSleepExpired(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		ttl   string
		since time.Time
		want  bool
	}{
		{"3600", now.Add(-time.Minute), false},
		{"3600", now.Add(-59 * time.Minute), false},
		{"3600", now.Add(-61 * time.Minute), true},
		{"", now.Add(-time.Minute), true},
		{"soon", now.Add(-time.Minute), true},
		{"0", now.Add(-time.Minute), true},
		{"-5", now.Add(-time.Minute), true},
		{"3600", time.Time{}, true},
	} {
		c := engine.Sleeping{Labels: map[string]string{}, Since: tt.since}
		if tt.ttl != "" {
			c.Labels[engine.LabelSleepTTL] = tt.ttl
		}
		if got := SleepExpired(c, now); got != tt.want {
			t.Errorf("ttl %q since %v: expired %v, want %v", tt.ttl, tt.since, got, tt.want)
		}
	}
}
