package config

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
)

// An originalCase is one value of a setting as an environment written
// for the original bridge may hold it: what Load makes of it (want), the
// warning it is accepted with, or the error it is refused with.
type originalCase struct {
	value string
	// want checks the loaded Config; nil for a refused value.
	want func(*Config) bool
	// warn is part of the one warning expected; "" for none.
	warn string
	// bad is part of the error expected; "" when the value is accepted.
	bad string
}

// originalSetting is a setting of the original and its cases.
type originalSetting struct {
	name  string
	cases []originalCase
}

// originalSettings returns, for every setting the original bridge reads,
// the spellings it accepts (as Python's int(), docker run and podman run
// take them) with what this bridge maps them to, and the values refused
// with their message. home and wd are the home and working directories.
func originalSettings(home, wd string) []originalSetting {
	level := func(want slog.Level) func(*Config) bool {
		return func(c *Config) bool { return c.LogLevel != nil && *c.LogLevel == want }
	}
	backend := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Engine.Backend == want }
	}
	image := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Session.Spec.Image == want && c.Bridge.Session.Spec.Image == want }
	}
	timeout := func(want time.Duration) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.DefaultTimeout == want }
	}
	maxTimeout := func(want time.Duration) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.MaxTimeout == want }
	}
	memory := func(want int64) func(*Config) bool {
		return func(c *Config) bool { return c.Session.Spec.MemoryBytes == want }
	}
	pids := func(want int64) func(*Config) bool {
		return func(c *Config) bool { return c.Session.Spec.PidsLimit == want }
	}
	cpus := func(want int64) func(*Config) bool {
		return func(c *Config) bool { return c.Session.Spec.NanoCPUs == want }
	}
	user := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Session.Spec.User == want }
	}
	idle := func(want time.Duration) func(*Config) bool {
		return func(c *Config) bool { return c.Session.IdleTimeout == want && c.Bridge.Session.IdleTimeout == want }
	}
	stateDir := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.Discovery.StateDir == want }
	}
	serversConfig := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.Discovery.ServersConfig == want }
	}
	allowSelf := func(want bool) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.Discovery.AllowSelf == want }
	}
	outputMode := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.OutputMode == want }
	}
	toolResults := func(want string) func(*Config) bool {
		return func(c *Config) bool { return c.Bridge.ToolResults == want }
	}
	const runtimeWant = `want "docker", "podman", "kubernetes", the path of the docker or podman binary`
	return []originalSetting{
		{EnvRuntime, []originalCase{
			{value: "docker", want: backend("docker")},
			{value: "podman", want: backend("podman")},
			{value: "Docker", want: backend("docker")},
			{value: "PODMAN", want: backend("podman")},
			{value: "auto", want: backend("")},
			// The original ran the CLI found by this name: a path or
			// another name of either binary.
			{value: "/usr/bin/podman", want: backend("podman"), warn: "taken as podman"},
			{value: "/usr/local/bin/docker", want: backend("docker"), warn: "taken as docker"},
			{value: "podman-remote", want: backend("podman"), warn: "taken as podman"},
			{value: `C:\Program Files\Docker\docker.exe`, want: backend("docker"), warn: "taken as docker"},
			{value: "nerdctl", bad: runtimeWant},
			{value: "/usr/bin/kubectl", bad: runtimeWant},
		}},
		{EnvImage, []originalCase{
			{value: "python:3.14-slim", want: image("python:3.14-slim")},
			{value: "python:3.12-slim", want: image("python:3.12-slim")},
			{value: "localhost/sandbox-python:3.11", want: image("localhost/sandbox-python:3.11")},
			{value: "ghcr.io/org/py@sha256:0123abcd", want: image("ghcr.io/org/py@sha256:0123abcd")},
			{value: "python 3", bad: "want an image reference"},
		}},
		{EnvTimeout, []originalCase{
			{value: "30", want: timeout(30 * time.Second)},
			{value: " 45 ", want: timeout(45 * time.Second)},
			{value: "+20", want: timeout(20 * time.Second)},
			{value: "007", want: timeout(7 * time.Second)},
			{value: "1_0", want: timeout(10 * time.Second)},
			// The original clamps every call's timeout to at least 1 s.
			{value: "0", want: timeout(time.Second), warn: "taken as 1"},
			{value: "-5", want: timeout(time.Second), warn: "taken as 1"},
			{value: "100000", want: timeout(24 * time.Hour), warn: "taken as 86400"},
			{value: "99999999999999999999", want: timeout(24 * time.Hour), warn: "taken as 86400"},
			// int("30s") and int("1.5") fail in the original too.
			{value: "30s", bad: "want whole seconds"},
			{value: "1.5", bad: "want whole seconds"},
			{value: "1__0", bad: "want whole seconds"},
		}},
		{EnvMaxTimeout, []originalCase{
			{value: "120", want: maxTimeout(2 * time.Minute)},
			{value: "600", want: maxTimeout(10 * time.Minute)},
			{value: "86400", want: maxTimeout(24 * time.Hour)},
			{value: "0", want: maxTimeout(time.Second), warn: "taken as 1"},
			{value: "86401", want: maxTimeout(24 * time.Hour), warn: "taken as 86400"},
			{value: "2m", bad: "want whole seconds"},
		}},
		{EnvMemory, []originalCase{
			// docker run --memory and podman run --memory: go-units' RAMInBytes.
			{value: "512m", want: memory(512 << 20)},
			{value: "512M", want: memory(512 << 20)},
			{value: "1g", want: memory(1 << 30)},
			{value: "1G", want: memory(1 << 30)},
			{value: "1.5g", want: memory(3 << 29)},
			{value: "512MiB", want: memory(512 << 20)},
			{value: "512mb", want: memory(512 << 20)},
			{value: "64 m", want: memory(64 << 20)},
			{value: "536870912", want: memory(512 << 20)},
			{value: "0", bad: "no memory limit"},
			{value: "1k", bad: "want a size of at least 6m"},
			{value: "-1", bad: "want a size of at least 6m"},
			{value: "lots", bad: "want a size of at least 6m"},
		}},
		{EnvPids, []originalCase{
			{value: "128", want: pids(128)},
			{value: "+64", want: pids(64)},
			{value: "1_024", want: pids(1024)},
			{value: "8", want: pids(8)},
			{value: "0", bad: "no pids limit is not allowed"},
			{value: "-1", bad: "no pids limit is not allowed"},
			{value: "4", bad: "at least 8"},
			{value: "12.5", bad: "at least 8"},
			{value: "many", bad: "at least 8"},
		}},
		{EnvCPUs, []originalCase{
			// docker run --cpus: a rational; 0 is no limit in both engines.
			{value: "1", want: cpus(1e9)},
			{value: "2", want: cpus(2e9)},
			{value: "1.5", want: cpus(1.5e9)},
			{value: "0.5", want: cpus(5e8)},
			{value: ".25", want: cpus(2.5e8)},
			{value: "3/2", want: cpus(1.5e9)},
			{value: "0.01", want: cpus(1e7)},
			{value: "0", want: cpus(0)},
			{value: "0.0", want: cpus(0)},
			{value: "-1", bad: "want a number of CPUs from 0.01 to 1024"},
			{value: "0.001", bad: "want a number of CPUs from 0.01 to 1024"},
			{value: "2000", bad: "want a number of CPUs from 0.01 to 1024"},
			{value: "fast", bad: "want a number of CPUs"},
			{value: "NaN", bad: "want a number of CPUs"},
			{value: "Inf", bad: "want a number of CPUs"},
		}},
		{EnvUser, []originalCase{
			{value: "65534:65534", want: user("65534:65534")},
			{value: "1000:1000", want: user("1000:1000")},
			{value: "1000", want: user("1000")},
			// docker run --user takes names; the bridge does not (its
			// tmpfs mounts are owned by numbers; a name may be root).
			{value: "nobody", bad: "user names are not resolved"},
			{value: "nobody:nogroup", bad: "user names are not resolved"},
			{value: "root", bad: "user names are not resolved"},
			{value: "0:0", bad: "running the sandbox as root (0) is not allowed"},
			{value: "1000:0", bad: "running the sandbox as root (0) is not allowed"},
		}},
		{EnvIdle, []originalCase{
			{value: "300", want: idle(5 * time.Minute)},
			{value: "1_800", want: idle(30 * time.Minute)},
			// The original takes max(0, value); 0 is never.
			{value: "0", want: idle(-1)},
			{value: "-1", want: idle(-1)},
			{value: "-300", want: idle(-1)},
			{value: "99999999999", want: idle(365 * 24 * time.Hour), warn: "a year"},
			{value: "5m", bad: "want whole seconds"},
			{value: "never", bad: "want whole seconds"},
		}},
		{EnvStateDir, []originalCase{
			// Path(value).expanduser().resolve() in the original.
			{value: "~/MCPs", want: stateDir(filepath.Join(home, "MCPs"))},
			{value: "~", want: stateDir(home)},
			{value: "/srv/mcp-state", want: stateDir("/srv/mcp-state")},
			{value: "state", want: stateDir(filepath.Join(wd, "state"))},
			{value: "./.mcp-bridge", want: stateDir(filepath.Join(wd, ".mcp-bridge"))},
			{value: "~root/MCPs", want: stateDir("/root/MCPs")},
			{value: "~no-such-user-here/x", want: stateDir(filepath.Join(wd, "~no-such-user-here", "x"))},
		}},
		{EnvServersConfig, []originalCase{
			{value: "/etc/mcp/servers.json", want: serversConfig("/etc/mcp/servers.json")},
			{value: "servers.toml", want: serversConfig(filepath.Join(wd, "servers.toml"))},
			{value: "~/servers.json", want: serversConfig(filepath.Join(home, "servers.json"))},
		}},
		{EnvAllowSelfServer, []originalCase{
			// The original: strip().lower() in {"1", "true", "yes"}.
			{value: "1", want: allowSelf(true)},
			{value: "true", want: allowSelf(true)},
			{value: "TRUE", want: allowSelf(true)},
			{value: " Yes ", want: allowSelf(true)},
			{value: "on", want: allowSelf(true)},
			{value: "0", want: allowSelf(false)},
			{value: "false", want: allowSelf(false)},
			{value: "no", want: allowSelf(false)},
			{value: "maybe", want: allowSelf(false), warn: "taken as 0 (off)"},
			{value: "2", want: allowSelf(false), warn: "taken as 0 (off)"},
		}},
		{EnvOutputMode, []originalCase{
			// The original: "compact", else TOON.
			{value: "compact", want: outputMode(mcpbridge.OutputCompact)},
			{value: "COMPACT", want: outputMode(mcpbridge.OutputCompact)},
			{value: "toon", want: outputMode(mcpbridge.OutputTOON)},
			{value: " Toon ", want: outputMode(mcpbridge.OutputTOON)},
			{value: "json", want: outputMode(mcpbridge.OutputTOON), warn: "taken as toon"},
			{value: "xml", want: outputMode(mcpbridge.OutputTOON), warn: "taken as toon"},
		}},
		{EnvLogLevel, []originalCase{
			// logging.basicConfig(level=...) takes these names; the
			// bridge takes them in any case, and Python's numbers.
			{value: "DEBUG", want: level(slog.LevelDebug)},
			{value: "INFO", want: level(slog.LevelInfo)},
			{value: "WARNING", want: level(slog.LevelWarn)},
			{value: "WARN", want: level(slog.LevelWarn)},
			{value: "ERROR", want: level(slog.LevelError)},
			{value: "CRITICAL", want: level(slog.LevelError + 4)},
			{value: "FATAL", want: level(slog.LevelError + 4)},
			{value: "NOTSET", want: level(slog.LevelDebug)},
			{value: "info", want: level(slog.LevelInfo)},
			{value: "10", want: level(slog.LevelDebug)},
			{value: "20", want: level(slog.LevelInfo)},
			{value: "30", want: level(slog.LevelWarn)},
			{value: "40", want: level(slog.LevelError)},
			{value: "50", want: level(slog.LevelError + 4)},
			{value: "chatty", bad: "want DEBUG, INFO, WARNING, ERROR or CRITICAL"},
			{value: "51", bad: "want DEBUG, INFO, WARNING, ERROR or CRITICAL"},
		}},
		{EnvToolResults, []originalCase{
			{value: "simple", want: toolResults(mcpbridge.ToolResultsSimple)},
			{value: "raw", want: toolResults(mcpbridge.ToolResultsRaw)},
			{value: "RAW", want: toolResults(mcpbridge.ToolResultsRaw)},
			{value: "dict", bad: "want simple"},
		}},
	}
}

// TestOriginalSettings loads each value of every setting of the original
// bridge alone: an accepted one maps to what the table says, with the
// warning it names and no other; a refused one fails Load with an error
// that wraps ErrInvalid and names the variable, the value and the reason.
func TestOriginalSettings(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range originalSettings(home, wd) {
		t.Run(s.name, func(t *testing.T) {
			for _, tc := range s.cases {
				c, err := Load(envOf(map[string]string{s.name: tc.value}))
				if tc.bad != "" {
					if err == nil {
						t.Errorf("%s=%q accepted; want refused with %q", s.name, tc.value, tc.bad)
					} else if msg := err.Error(); !errors.Is(err, ErrInvalid) || !strings.Contains(msg, s.name) ||
						!strings.Contains(msg, tc.value) || !strings.Contains(msg, tc.bad) {
						t.Errorf("%s=%q: error %q; want one naming the variable, the value and %q", s.name, tc.value, msg, tc.bad)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s=%q: %v", s.name, tc.value, err)
					continue
				}
				if !tc.want(c) {
					t.Errorf("%s=%q: loaded as %+v", s.name, tc.value, c)
				}
				switch {
				case tc.warn == "" && len(c.Warnings) > 0:
					t.Errorf("%s=%q: unexpected warnings %q", s.name, tc.value, c.Warnings)
				case tc.warn != "" && (len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], s.name) || !strings.Contains(c.Warnings[0], tc.warn)):
					t.Errorf("%s=%q: warnings %q; want one naming the variable and %q", s.name, tc.value, c.Warnings, tc.warn)
				}
			}
		})
	}
}

// TestWarningsAreLogged checks that the logger of a Config logs every
// warning of its settings, naming the variable.
func TestWarningsAreLogged(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvOutputMode: "json", EnvRuntime: "/usr/bin/podman", EnvLogFormat: "json"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	c.Logger(&buf, slog.LevelInfo)
	out := buf.String()
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, `"level":"WARN"`) ||
		!strings.Contains(out, EnvOutputMode+`=\"json\": taken as toon`) || !strings.Contains(out, EnvRuntime+`=\"/usr/bin/podman\": taken as podman`) {
		t.Fatalf("logged:\n%s", out)
	}
	if c, _ := Load(envOf(nil)); c.Warnings != nil {
		t.Fatalf("warnings with nothing set: %q", c.Warnings)
	}
}
