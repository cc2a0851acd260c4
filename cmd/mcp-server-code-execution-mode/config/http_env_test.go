package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadHTTPDefaults reads the serving settings with none set.
func TestLoadHTTPDefaults(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	h := c.HTTP
	if h.Token != "" || h.AllowedHosts != nil || h.AllowedOrigins != nil || h.SessionIdleTimeout != 0 ||
		h.MaxBodyBytes != 0 || h.BodyTimeout != 0 {
		t.Fatalf("HTTP defaults = %+v", h)
	}
	// As many sandboxes as the memory holds, within bounds.
	if h.MaxSessions < 4 || h.MaxSessions > 1000 {
		t.Fatalf("MaxSessions defaults to %d, want 4–1000", h.MaxSessions)
	}
	if c.Bridge.PoolSize != 2 || c.Bridge.MaxQueuedCalls != 0 {
		t.Fatalf("PoolSize %d, MaxQueuedCalls %d; want 2 and 0 (the bridge's default)", c.Bridge.PoolSize, c.Bridge.MaxQueuedCalls)
	}
}

func TestLoadHTTPGood(t *testing.T) {
	const token = "0123456789abcdef" // the shortest accepted
	tests := []struct {
		env   map[string]string
		check func(*Config) bool
	}{
		{map[string]string{EnvHTTPToken: token}, func(c *Config) bool { return c.HTTP.Token == token }},
		{map[string]string{EnvHTTPToken: "  " + token + "~!  "}, func(c *Config) bool { return c.HTTP.Token == token+"~!" }},
		{map[string]string{EnvAllowedHosts: "bridge.example.com, api.example:8443 ,,"}, func(c *Config) bool {
			return slices.Equal(c.HTTP.AllowedHosts, []string{"bridge.example.com", "api.example:8443"})
		}},
		{map[string]string{EnvAllowedHosts: "[::1]:8080"}, func(c *Config) bool { return slices.Equal(c.HTTP.AllowedHosts, []string{"[::1]:8080"}) }},
		{map[string]string{EnvAllowedOrigins: "https://app.example.com, http://localhost:3000/"}, func(c *Config) bool {
			return slices.Equal(c.HTTP.AllowedOrigins, []string{"https://app.example.com", "http://localhost:3000/"})
		}},
		{map[string]string{EnvAllowedOrigins: " , "}, func(c *Config) bool { return c.HTTP.AllowedOrigins == nil }},
		{map[string]string{EnvMaxSessions: "1"}, func(c *Config) bool { return c.HTTP.MaxSessions == 1 }},
		{map[string]string{EnvMaxSessions: "100000"}, func(c *Config) bool { return c.HTTP.MaxSessions == 100000 }},
		{map[string]string{EnvSessionIdle: "90"}, func(c *Config) bool { return c.HTTP.SessionIdleTimeout == 90*time.Second }},
		// The setting's 0 is "never": the handler's negative.
		{map[string]string{EnvSessionIdle: "0"}, func(c *Config) bool { return c.HTTP.SessionIdleTimeout < 0 }},
		{map[string]string{EnvPoolSize: "0"}, func(c *Config) bool { return c.Bridge.PoolSize == 0 }},
		{map[string]string{EnvPoolSize: "5"}, func(c *Config) bool { return c.Bridge.PoolSize == 5 }},
		{map[string]string{EnvPoolSize: "64"}, func(c *Config) bool { return c.Bridge.PoolSize == 64 }},
		{map[string]string{EnvMaxQueuedCalls: "1"}, func(c *Config) bool { return c.Bridge.MaxQueuedCalls == 1 }},
		{map[string]string{EnvMaxQueuedCalls: "1000"}, func(c *Config) bool { return c.Bridge.MaxQueuedCalls == 1000 }},
		{map[string]string{EnvTaskAfter: "120"}, func(c *Config) bool { return c.Bridge.Tasks.After == 120*time.Second }},
		{map[string]string{EnvTaskAfter: "0"}, func(c *Config) bool { return c.Bridge.Tasks.After > 0 && c.Bridge.Tasks.After < time.Second }},
		{map[string]string{EnvTaskAfter: "off"}, func(c *Config) bool { return c.Bridge.Tasks.After < 0 }},
		{map[string]string{EnvTaskAfter: ""}, func(c *Config) bool { return c.Bridge.Tasks.After == 0 }},
		{map[string]string{EnvTaskTTL: "600"}, func(c *Config) bool { return c.Bridge.Tasks.TTL == 10*time.Minute }},
		{map[string]string{EnvMaxTasks: "9", EnvMaxSandboxTasks: "3"}, func(c *Config) bool {
			return c.Bridge.Tasks.Max == 9 && c.Bridge.Tasks.MaxPerSandbox == 3
		}},
		// The default session limit follows the sandbox's memory limit.
		{map[string]string{EnvMemory: "1t"}, func(c *Config) bool { return c.HTTP.MaxSessions == 4 }},
	}
	for _, tt := range tests {
		c, err := Load(envOf(tt.env))
		if err != nil || !tt.check(c) {
			t.Errorf("Load(%v) = %+v, %v", tt.env, c, err)
		}
	}
}

func TestLoadHTTPBad(t *testing.T) {
	tests := []badSetting{
		{EnvAllowedHosts, "https://bridge.example.com"},
		{EnvAllowedHosts, "bridge example"},
		{EnvAllowedHosts, "user@bridge.example.com"},
		{EnvAllowedHosts, strings.Repeat("h", 256)},
		{EnvAllowedOrigins, "app.example.com"},
		{EnvAllowedOrigins, "ftp://app.example.com"},
		{EnvAllowedOrigins, "https://"},
		{EnvAllowedOrigins, "https://app.example.com/path"},
		{EnvMaxSessions, "0"},
		{EnvMaxSessions, "-1"},
		{EnvMaxSessions, "many"},
		{EnvMaxSessions, "100001"},
		{EnvSessionIdle, "-1"},
		{EnvSessionIdle, "30m"},
		{EnvPoolSize, "-1"},
		{EnvPoolSize, "65"},
		{EnvPoolSize, "two"},
		{EnvMaxQueuedCalls, "0"},
		{EnvMaxQueuedCalls, "1001"},
		{EnvMaxQueuedCalls, "x"},
		{EnvTaskAfter, "-1"},
		{EnvTaskAfter, "1m"},
		{EnvTaskAfter, "sometimes"},
		{EnvTaskTTL, "0"},
		{EnvTaskTTL, "1h"},
		{EnvMaxTasks, "0"},
		{EnvMaxSandboxTasks, "17"},
		{EnvMaxSandboxTasks, "0"},
	}
	checkRefused(t, tests)
	// Of a list, each bad item is named, the good ones are not.
	_, err := Load(envOf(map[string]string{EnvAllowedHosts: "good.example, bad/one, bad two"}))
	if err == nil || !strings.Contains(err.Error(), `"bad/one"`) || !strings.Contains(err.Error(), `"bad two"`) || strings.Contains(err.Error(), "good.example") {
		t.Errorf("a list with two bad items: %v", err)
	}
}

// TestLoadHTTPTokenRejected refuses weak tokens without writing them in
// the error, which ends up in logs.
func TestLoadHTTPTokenRejected(t *testing.T) {
	for _, token := range []string{
		"short",
		"0123456789abcde", // 15
		"0123456789 abcdef",
		"0123456789\tabcdef",
		"ééééééééééééééééé",
		"0123456789abcdef\x7f",
	} {
		_, err := Load(envOf(map[string]string{EnvHTTPToken: token}))
		if err == nil {
			t.Errorf("token %q accepted", token)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(msg, EnvHTTPToken) || !strings.Contains(msg, "at least 16") {
			t.Errorf("token %q: error %q does not name %s and the rule", token, msg, EnvHTTPToken)
		}
		if strings.Contains(msg, strings.TrimSpace(token)) {
			t.Errorf("token %q: the error %q echoes it", token, msg)
		}
	}
}
