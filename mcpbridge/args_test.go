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

// TestForkArg: fork is a whole number of copies; anything else is refused
// before anything runs.
func TestForkArg(t *testing.T) {
	known := func(string) bool { return false }
	for raw, want := range map[string]int{`{"code":"x"}`: 0, `{"code":"x","fork":2}`: 2, `{"code":"x","fork":null}`: 0, `{"code":"x","fork":0}`: 0} {
		a, problem := parseArgs(json.RawMessage(raw), time.Second, time.Second, known)
		if problem != "" || a.fork != want {
			t.Errorf("%s: fork %d (%s), want %d", raw, a.fork, problem, want)
		}
	}
	for _, raw := range []string{`{"code":"x","fork":-1}`, `{"code":"x","fork":"2"}`, `{"code":"x","fork":1.5}`, `{"code":"x","fork":true}`} {
		if _, problem := parseArgs(json.RawMessage(raw), time.Second, time.Second, known); problem == "" {
			t.Errorf("%s: accepted", raw)
		}
	}
}
