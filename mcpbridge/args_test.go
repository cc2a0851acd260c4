package mcpbridge

import (
	"encoding/json"
	"testing"
	"time"
)

// TestTimeoutClamped checks that a missing timeout is the default and a
// given one is clamped to 1 s … max.
func TestTimeoutClamped(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want time.Duration
	}{
		{`{"code":"x"}`, 5 * time.Second},
		{`{"code":"x","timeout":0}`, time.Second},
		{`{"code":"x","timeout":-4}`, time.Second},
		{`{"code":"x","timeout":3}`, 3 * time.Second},
		{`{"code":"x","timeout":1000}`, 7 * time.Second},
	} {
		a, problem := parseArgs(json.RawMessage(tt.raw), 5*time.Second, 7*time.Second, func(string) bool { return false })
		if problem != "" || a.timeout != tt.want {
			t.Errorf("%s: timeout %v (%s), want %v", tt.raw, a.timeout, problem, tt.want)
		}
	}
}
