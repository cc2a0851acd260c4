package config

import (
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Session.Spec
	// Zero values mean each layer's documented default.
	if c.LogLevel != nil || c.Engine.Backend != "" || s.Image != "" || s.User != "" || s.MemoryBytes != 0 ||
		s.PidsLimit != 0 || s.NanoCPUs != 0 || s.OCIRuntime != "" || c.Session.IdleTimeout != 0 || c.Session.MaxOutputBytes != 0 ||
		c.Session.MaxImages != 0 || c.Session.MaxImageBytes != 0 || c.Session.InputDir != "" || c.Session.InputMaxBytes != 0 {
		t.Fatalf("defaults = %+v", c)
	}
	b := c.Bridge
	if b.DefaultTimeout != 0 || b.MaxTimeout != 0 || b.OutputMode != "" || b.Discovery.StateDir != "" ||
		b.Discovery.ServersConfig != "" || b.Discovery.AllowSelf {
		t.Fatalf("bridge defaults = %+v", b)
	}
	var nofile, nproc unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	unix.Getrlimit(unix.RLIMIT_NPROC, &nproc)
	if s.NoFile == 0 || s.NoFile > nofile.Max || s.NProc == 0 || s.NProc > nproc.Max {
		t.Fatalf("rlimits nofile=%d (hard %d) nproc=%d (hard %d): want set and at or below the hard limits",
			s.NoFile, nofile.Max, s.NProc, nproc.Max)
	}
}

func TestLoadGood(t *testing.T) {
	level := func(c *Config, want slog.Level) bool { return c.LogLevel != nil && *c.LogLevel == want }
	dir := t.TempDir()
	tests := []struct {
		env   map[string]string
		check func(*Config) bool
	}{
		{map[string]string{EnvRuntime: "Docker"}, func(c *Config) bool { return c.Engine.Backend == "docker" }},
		{map[string]string{EnvRuntime: "podman"}, func(c *Config) bool { return c.Engine.Backend == "podman" }},
		{map[string]string{EnvRuntime: "auto"}, func(c *Config) bool { return c.Engine.Backend == "" }},
		{map[string]string{EnvImage: "localhost/sandbox-python:3.11"}, func(c *Config) bool { return c.Session.Spec.Image == "localhost/sandbox-python:3.11" }},
		{map[string]string{EnvUser: "1000:1000"}, func(c *Config) bool { return c.Session.Spec.User == "1000:1000" }},
		{map[string]string{EnvUser: "1000"}, func(c *Config) bool { return c.Session.Spec.User == "1000" }},
		{map[string]string{EnvMemory: "1g"}, func(c *Config) bool { return c.Session.Spec.MemoryBytes == 1<<30 }},
		{map[string]string{EnvMemory: "256MiB"}, func(c *Config) bool { return c.Session.Spec.MemoryBytes == 256<<20 }},
		{map[string]string{EnvMemory: " 64m "}, func(c *Config) bool { return c.Session.Spec.MemoryBytes == 64<<20 }},
		{map[string]string{EnvPids: "64"}, func(c *Config) bool { return c.Session.Spec.PidsLimit == 64 }},
		{map[string]string{EnvCPUs: "1.5"}, func(c *Config) bool { return c.Session.Spec.NanoCPUs == 1_500_000_000 }},
		{map[string]string{EnvCPUs: "0.25"}, func(c *Config) bool { return c.Session.Spec.NanoCPUs == 250_000_000 }},
		{map[string]string{EnvOCIRuntime: "runsc"}, func(c *Config) bool { return c.Session.Spec.OCIRuntime == "runsc" }},
		{map[string]string{EnvIdle: "60"}, func(c *Config) bool { return c.Session.IdleTimeout == time.Minute }},
		// The setting's 0 is "never": the session's negative.
		{map[string]string{EnvIdle: "0"}, func(c *Config) bool { return c.Session.IdleTimeout < 0 }},
		{map[string]string{EnvMaxOutput: "64k"}, func(c *Config) bool { return c.Session.MaxOutputBytes == 64<<10 }},
		{map[string]string{EnvTimeout: "200", EnvMaxTimeout: "60"}, func(c *Config) bool {
			return c.Bridge.DefaultTimeout == 200*time.Second && c.Bridge.MaxTimeout == time.Minute
		}},
		{map[string]string{EnvOutputMode: "TOON"}, func(c *Config) bool { return c.Bridge.OutputMode == mcpbridge.OutputTOON }},
		{map[string]string{EnvOutputBudget: "64k"}, func(c *Config) bool { return c.Bridge.OutputBudget == 64<<10 }},
		{map[string]string{EnvStateDir: "~/state", EnvServersConfig: "/etc/mcp.json", EnvAllowSelfServer: "1"}, func(c *Config) bool {
			d := c.Bridge.Discovery
			home, _ := os.UserHomeDir()
			return d.StateDir == filepath.Join(home, "state") && d.ServersConfig == "/etc/mcp.json" && d.AllowSelf
		}},
		{map[string]string{EnvAllowSelfServer: "0"}, func(c *Config) bool { return !c.Bridge.Discovery.AllowSelf }},
		{map[string]string{EnvPolicy: "/etc/mcp/policy.toml", EnvSearchKeywords: "~/keywords.json"}, func(c *Config) bool {
			home, _ := os.UserHomeDir()
			return c.Bridge.PolicyFile == "/etc/mcp/policy.toml" && c.Bridge.SearchKeywordsFile == filepath.Join(home, "keywords.json") && c.Deprecations == nil
		}},
		{map[string]string{EnvEgressCA: "/etc/mcp/ca.pem, /etc/mcp/ca-key.pem"}, func(c *Config) bool {
			return c.EgressCACert == "/etc/mcp/ca.pem" && c.EgressCAKey == "/etc/mcp/ca-key.pem"
		}},
		// The deprecated name, read when the new one is unset.
		{map[string]string{EnvSearchAliases: "/etc/mcp/aliases.json"}, func(c *Config) bool {
			return c.Bridge.SearchKeywordsFile == "/etc/mcp/aliases.json" && len(c.Deprecations) == 1
		}},
		{map[string]string{EnvSearchAliases: "/etc/mcp/aliases.json", EnvSearchKeywords: "/etc/mcp/keywords.json"}, func(c *Config) bool {
			return c.Bridge.SearchKeywordsFile == "/etc/mcp/keywords.json" && c.Deprecations == nil
		}},
		// The bridge's session template is the session's settings.
		{map[string]string{EnvMemory: "64m", EnvIdle: "9"}, func(c *Config) bool {
			return c.Bridge.Session.Spec.MemoryBytes == 64<<20 && c.Bridge.Session.IdleTimeout == 9*time.Second
		}},
		// Log levels: slog's names, and Python logging's as the original accepts them.
		{map[string]string{EnvLogLevel: "debug"}, func(c *Config) bool { return level(c, slog.LevelDebug) }},
		{map[string]string{EnvLogLevel: "NOTSET"}, func(c *Config) bool { return level(c, slog.LevelDebug) }},
		{map[string]string{EnvLogLevel: "INFO"}, func(c *Config) bool { return level(c, slog.LevelInfo) }},
		{map[string]string{EnvLogLevel: "WARNING"}, func(c *Config) bool { return level(c, slog.LevelWarn) }},
		{map[string]string{EnvLogLevel: "warn"}, func(c *Config) bool { return level(c, slog.LevelWarn) }},
		{map[string]string{EnvLogLevel: "ERROR"}, func(c *Config) bool { return level(c, slog.LevelError) }},
		{map[string]string{EnvLogLevel: "CRITICAL"}, func(c *Config) bool { return level(c, slog.LevelError+4) }},
		{map[string]string{EnvLogLevel: "FATAL"}, func(c *Config) bool { return level(c, slog.LevelError+4) }},
		{map[string]string{EnvLogLevel: "30"}, func(c *Config) bool { return level(c, slog.LevelWarn) }},
		{map[string]string{EnvLogLevel: "0"}, func(c *Config) bool { return level(c, slog.LevelDebug) }},
		// Rich results: images and the input directory.
		{map[string]string{EnvMaxImages: "3"}, func(c *Config) bool { return c.Session.MaxImages == 3 }},
		{map[string]string{EnvMaxImages: "1000"}, func(c *Config) bool { return c.Session.MaxImages == 1000 }},
		// The setting's 0 is "no images": the session's negative.
		{map[string]string{EnvMaxImages: "0"}, func(c *Config) bool {
			return c.Session.MaxImages == -1 && c.Bridge.Session.MaxImages == -1
		}},
		{map[string]string{EnvMaxImageBytes: "16m"}, func(c *Config) bool { return c.Session.MaxImageBytes == 16<<20 }},
		{map[string]string{EnvMaxImageBytes: "1k"}, func(c *Config) bool { return c.Session.MaxImageBytes == 1<<10 }},
		{map[string]string{EnvMaxImageBytes: "1g"}, func(c *Config) bool { return c.Session.MaxImageBytes == 1<<30 }},
		{map[string]string{EnvInputMaxBytes: "128m"}, func(c *Config) bool { return c.Session.InputMaxBytes == 128<<20 }},
		{map[string]string{EnvInputMaxBytes: "1k"}, func(c *Config) bool { return c.Session.InputMaxBytes == 1<<10 }},
		{map[string]string{EnvInputMaxBytes: "16g"}, func(c *Config) bool { return c.Session.InputMaxBytes == 16<<30 }},
		{map[string]string{EnvInputDir: dir, EnvMaxImages: "2", EnvMaxImageBytes: "2m", EnvInputMaxBytes: "8m"}, func(c *Config) bool {
			b := c.Bridge.Session
			return c.Session.InputDir == dir && b.InputDir == dir && b.MaxImages == 2 && b.MaxImageBytes == 2<<20 && b.InputMaxBytes == 8<<20
		}},
		{map[string]string{EnvInputDir: " " + dir + "/ "}, func(c *Config) bool { return c.Session.InputDir == dir }},
	}
	for _, tt := range tests {
		c, err := Load(envOf(tt.env))
		if err != nil || !tt.check(c) {
			t.Errorf("Load(%v) = %+v, %v", tt.env, c, err)
		}
	}
}

func TestLoadBad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []badSetting{
		{EnvLogFormat, "yaml"},
		{EnvDrainTimeout, "-1"},
		{EnvDrainTimeout, "3601"},
		{EnvDrainTimeout, "soon"},
		{EnvRuntime, "kubernetes-ish"},
		{EnvK8sNamespace, "Bad_Name"},
		{EnvK8sRuntimeClass, "-gvisor"},
		{EnvK8sTemplate, "Python.Warm"},
		{EnvImage, "python 3"},
		{EnvUser, "nobody"},
		{EnvUser, "0:0"},
		{EnvUser, "1000:root"},
		{EnvMemory, "lots"},
		{EnvMemory, "1k"},
		{EnvMemory, "-5m"},
		{EnvPids, "many"},
		{EnvPids, "0"},
		{EnvPids, "-1"},
		{EnvCPUs, "fast"},
		{EnvCPUs, "NaN"},
		{EnvCPUs, "Inf"},
		{EnvOCIRuntime, "/usr/bin/runsc"},
		{EnvIdle, "5m"},
		{EnvMaxOutput, "lots"},
		{EnvMaxOutput, "10"},
		{EnvTimeout, "soon"},
		{EnvOutputBudget, "10"},
		{EnvOutputBudget, "huge"},
		{EnvLogLevel, "chatty"},
		{EnvLogLevel, "51"},
		{EnvMaxImages, "-1"},
		{EnvMaxImages, "1001"},
		{EnvMaxImages, "x"},
		{EnvMaxImages, "2.5"},
		{EnvMaxImageBytes, "10"},
		{EnvMaxImageBytes, "2g"},
		{EnvMaxImageBytes, "big"},
		{EnvMaxImageBytes, "-1m"},
		{EnvInputDir, filepath.Join(dir, "missing")},
		{EnvInputDir, file},
		{EnvInputMaxBytes, "10"},
		{EnvInputMaxBytes, "17g"},
		{EnvInputMaxBytes, "lots"},
		{EnvInputMaxBytes, "-64m"},
	}
	checkRefused(t, tests)
}

// A badSetting is a variable and a value Load must refuse.
type badSetting struct{ name, value string }

// checkRefused checks that Load refuses each setting alone with an error
// that wraps ErrInvalid and names the variable and the value.
func checkRefused(t *testing.T, tests []badSetting) {
	t.Helper()
	for _, tt := range tests {
		_, err := Load(envOf(map[string]string{tt.name: tt.value}))
		if err == nil {
			t.Errorf("%s=%q accepted", tt.name, tt.value)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.value) {
			t.Errorf("%s=%q: error %q does not wrap ErrInvalid and name the variable and value", tt.name, tt.value, err)
		}
	}
}

// TestLoadInputDirRelative makes a relative input directory absolute, from
// the working directory.
func TestLoadInputDirRelative(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	// The working directory as the process sees it (dir may hold a symbolic link).
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"in", "./in", "in/", "in/../in", "."} {
		c, err := Load(envOf(map[string]string{EnvInputDir: v}))
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvInputDir, v, err)
		}
		want := filepath.Join(wd, v)
		if got := c.Session.InputDir; got != want || !filepath.IsAbs(got) {
			t.Errorf("%s=%q: InputDir %q; want %q", EnvInputDir, v, got, want)
		}
	}
}

func TestLoadReportsEveryBadVariable(t *testing.T) {
	_, err := Load(envOf(map[string]string{EnvMemory: "lots", EnvPids: "many", EnvTimeout: "soon"}))
	for _, name := range []string{EnvMemory, EnvPids, EnvTimeout} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("err = %v, want %s named", err, name)
		}
	}
}

func TestSandboxSpec(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvMemory: "64m", EnvCPUs: "2", EnvOCIRuntime: "runsc"}))
	if err != nil {
		t.Fatal(err)
	}
	spec := c.SandboxSpec("sess", []string{"python3"})
	if spec.MemoryBytes != 64<<20 || spec.NanoCPUs != 2e9 || spec.OCIRuntime != "runsc" || spec.Session != "sess" ||
		spec.Cmd[0] != "python3" || spec.NoFile != c.Session.Spec.NoFile || c.Session.Spec.Session != "" {
		t.Fatalf("Spec = %+v", spec)
	}
}

func TestLoadLogFormatAndDrain(t *testing.T) {
	for _, tt := range []struct {
		env    map[string]string
		format string
		drain  time.Duration
	}{
		{map[string]string{}, "", 0},
		{map[string]string{EnvLogFormat: "JSON", EnvDrainTimeout: "45"}, LogJSON, 45 * time.Second},
		{map[string]string{EnvLogFormat: "text", EnvDrainTimeout: "0"}, LogText, -1},
	} {
		c, err := Load(envOf(tt.env))
		if err != nil || c.LogFormat != tt.format || c.DrainTimeout != tt.drain {
			t.Errorf("Load(%v): format %q, drain %v, %v; want %q, %v", tt.env, c.LogFormat, c.DrainTimeout, err, tt.format, tt.drain)
		}
	}
	var buf strings.Builder
	c, _ := Load(envOf(map[string]string{EnvLogFormat: "json"}))
	c.Logger(&buf, slog.LevelInfo).Info("hello", "session", "session-1")
	if got := buf.String(); !strings.HasPrefix(got, "{") || !strings.Contains(got, `"session":"session-1"`) {
		t.Errorf("a JSON log line: %q", got)
	}
}

func TestLoadEngines(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvEngines: "docker, podman=unix:///run/podman/podman.sock"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Engines) != 2 || c.Engines[1].Address != "unix:///run/podman/podman.sock" || c.Engine.Backend != "" {
		t.Fatalf("engines %+v, backend %q", c.Engines, c.Engine.Backend)
	}
	if c, err := Load(envOf(nil)); err != nil || c.Engines != nil {
		t.Fatalf("unset: %+v, %v", c.Engines, err)
	}
	for env, want := range map[string]string{
		"garbage":                       `MCP_BRIDGE_ENGINES: engine 1 ("garbage"): unknown backend "garbage"`,
		"docker=tcp://h":                "want tcp://HOST:PORT",
		"docker,docker":                 "the same engine as engine 1",
		"docker=tcp://h:1?certs=/nodir": "certs directory /nodir",
	} {
		_, err := Load(envOf(map[string]string{EnvEngines: env}))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("MCP_BRIDGE_ENGINES=%q: %v, want %q", env, err, want)
		}
	}
	if c, err := Load(envOf(map[string]string{EnvOpenProbes: "1"})); err != nil || !c.HTTP.OpenProbes {
		t.Errorf("%s=1: %+v, %v", EnvOpenProbes, c.HTTP, err)
	}
	if _, err := Load(envOf(map[string]string{EnvOpenProbes: "maybe"})); err == nil || !strings.Contains(err.Error(), EnvOpenProbes) {
		t.Errorf("%s=maybe: %v", EnvOpenProbes, err)
	}
	if c, err := Load(envOf(map[string]string{EnvReplica: "bridge-7"})); err != nil || c.Bridge.Replica != "bridge-7" {
		t.Errorf("%s=bridge-7: %q, %v", EnvReplica, c.Bridge.Replica, err)
	}
	for _, bad := range []string{"/etc/ca.pem", "/etc/ca.pem,", ",/etc/key.pem", "a,b,c"} {
		if _, err := Load(envOf(map[string]string{EnvEgressCA: bad})); err == nil || !strings.Contains(err.Error(), EnvEgressCA) {
			t.Errorf("%s=%q: %v", EnvEgressCA, bad, err)
		}
	}
	for _, bad := range []string{"Bridge", "a.b", "a b", strings.Repeat("x", 33)} {
		if _, err := Load(envOf(map[string]string{EnvReplica: bad})); err == nil || !strings.Contains(err.Error(), EnvReplica) {
			t.Errorf("%s=%q: %v", EnvReplica, bad, err)
		}
	}
	_, err = Load(envOf(map[string]string{EnvEngines: "docker", EnvRuntime: "podman"}))
	if err == nil || !strings.Contains(err.Error(), "MCP_BRIDGE_ENGINES and MCP_BRIDGE_RUNTIME are both set") {
		t.Errorf("both set: %v", err)
	}
}

// TestLoadDeprecatedSearchAliases: MCP_BRIDGE_SEARCH_ALIASES, the former
// name of MCP_BRIDGE_SEARCH_KEYWORDS, is read when the new one is unset,
// and Logger logs one line that says it is deprecated and names the new.
func TestLoadDeprecatedSearchAliases(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvSearchAliases: "/etc/mcp/aliases.json"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Bridge.SearchKeywordsFile != "/etc/mcp/aliases.json" {
		t.Errorf("SearchKeywordsFile %q", c.Bridge.SearchKeywordsFile)
	}
	var buf strings.Builder
	c.Logger(&buf, slog.LevelInfo)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "deprecated") || !strings.Contains(lines[0], EnvSearchAliases) || !strings.Contains(lines[0], EnvSearchKeywords) {
		t.Errorf("log: %q, want one line saying %s is deprecated for %s", buf.String(), EnvSearchAliases, EnvSearchKeywords)
	}
	c, _ = Load(envOf(map[string]string{EnvSearchKeywords: "/etc/mcp/keywords.json"}))
	buf.Reset()
	c.Logger(&buf, slog.LevelInfo)
	if buf.Len() != 0 {
		t.Errorf("the new name logs %q", buf.String())
	}
}

func TestLoadKubernetes(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvRuntime: "Kubernetes", EnvK8sNamespace: "team-a", EnvK8sRuntimeClass: "gvisor",
		EnvK8sTemplate: "python-warm"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine.Backend != engine.BackendKubernetes || c.Engine.Kubernetes.Namespace != "team-a" || c.Engine.Kubernetes.RuntimeClass != "gvisor" ||
		c.Engine.Kubernetes.SandboxTemplate != "python-warm" {
		t.Fatalf("kubernetes settings: %+v", c.Engine)
	}
	pod := map[string]string{EnvRuntime: "kubernetes", EnvPodNamespace: "mcp-bridge", EnvPodName: "bridge-0",
		EnvPodUID: "6f1c1d3e-0c6b-4a57-9d2b-2b8f0e1f4a10"}
	c, err = Load(envOf(pod))
	if err != nil || c.Engine.Kubernetes.Owner != (engine.PodRef{Namespace: "mcp-bridge", Name: "bridge-0", UID: "6f1c1d3e-0c6b-4a57-9d2b-2b8f0e1f4a10"}) {
		t.Fatalf("the bridge's pod: %+v %v", c.Engine.Kubernetes.Owner, err)
	}
	for _, bad := range []struct{ name, value, want string }{
		{EnvPodUID, "", "set all three or none"},
		{EnvPodName, "", "set all three or none"},
		{EnvPodUID, "not-a-uid", "want a pod's UID"},
		{EnvPodName, "Bridge_0", "want a pod's name"},
		{EnvPodName, strings.Repeat("b", 64), "at most 63"},
	} {
		env := maps.Clone(pod)
		env[bad.name] = bad.value
		if _, err := Load(envOf(env)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s=%q: %v, want %q", bad.name, bad.value, err, bad.want)
		}
	}
	c, err = Load(envOf(map[string]string{EnvEngines: "docker,kubernetes@prod:eu/1"}))
	if err != nil || len(c.Engines) != 2 || c.Engines[1].Name() != "kubernetes@prod:eu/1" {
		t.Fatalf("kubernetes in MCP_BRIDGE_ENGINES: %+v %v", c.Engines, err)
	}
}
