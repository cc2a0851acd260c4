// Package config is the one place where the bridge's settings are read.
//
// Load reads every MCP_BRIDGE_* variable (and MCP_SERVERS_CONFIG) once,
// validates each, reports every invalid one by name in a single error,
// and returns a Config whose fields are the typed options of each layer:
// the engine's (AutoOptions, the sandbox Spec), the session's
// (entrypoint.Options) and the MCP server's (mcpbridge.Options). No other
// package reads these variables. Each one is described in settings.go
// (Settings), which docs/SETTINGS.md is generated from and doctor lists
// the set ones of (Effective). The engines' own client variables
// (DOCKER_HOST, DOCKER_CERT_PATH, DOCKER_CONTEXT, DOCKER_CONFIG,
// CONTAINER_HOST, XDG_RUNTIME_DIR) are read by the engine backends, as
// their CLIs read them.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// A Config is every setting of the bridge, validated, split by the layer
// that uses it.
type Config struct {
	// LogLevel is the level of the logs on stderr, when MCP_BRIDGE_LOG_LEVEL
	// is set; nil leaves the command's default.
	LogLevel *slog.Level
	// LogFormat is LogText or LogJSON (MCP_BRIDGE_LOG_FORMAT). Zero:
	// LogText.
	LogFormat string
	// Engine selects the container engine (MCP_BRIDGE_RUNTIME). Its
	// Logger is left for the command to set.
	Engine engine.AutoOptions
	// Engines are the engines sandboxes are placed on, the least loaded
	// first (MCP_BRIDGE_ENGINES); when set, Engine.Backend is unset.
	// Zero: the one engine Engine selects.
	Engines []engine.Endpoint
	// Session holds the session settings: the template of every
	// sandbox's Spec (image, user, limits, OCI runtime; Cmd and Session
	// are set per session), the idle timeout and the output cap. The
	// bridge and exec add the rest.
	Session entrypoint.Options
	// Bridge holds the MCP server's settings: call timeouts, output
	// mode, where servers are discovered, the warm pool (PoolSize is
	// for serving HTTP; stdio starts one sandbox at most) and the call
	// queue.
	Bridge mcpbridge.Options
	// HTTP holds the settings of serving over Streamable HTTP: token,
	// allowed hosts and origins, session limit and idle timeout.
	HTTP mcpbridge.HTTPOptions
	// Warnings say which values were accepted as something else, as the
	// original bridge took them (an unknown MCP_BRIDGE_OUTPUT_MODE as
	// toon, a path in MCP_BRIDGE_RUNTIME as its engine, …), each naming
	// its variable; Logger logs them. Zero: none.
	Warnings []string
	// Deprecations say which deprecated variables were read, each naming
	// the variable that replaces it; Logger logs them. Zero: none.
	Deprecations []string
	// DrainTimeout is how long `serve`, told to stop, lets calls in
	// flight finish before it ends their sessions
	// (MCP_BRIDGE_DRAIN_TIMEOUT). Zero: the command's default (30 s);
	// negative: none (the setting's 0).
	DrainTimeout time.Duration
	// AuditLog is the file audit records are appended to
	// (MCP_BRIDGE_AUDIT_LOG), opened by the command with Audit as its
	// options. Zero: no audit records.
	AuditLog string
	// Audit holds the audit log's options: MaxBytes from
	// MCP_BRIDGE_AUDIT_MAX_BYTES. Its Logger is left for the command.
	Audit audit.Options
	// EgressCACert and EgressCAKey are the files of the egress gateway's
	// CA (MCP_BRIDGE_EGRESS_CA, "CERT.pem,KEY.pem"), loaded by the
	// command, for replicas that share sandboxes. Zero: the bridge makes
	// a CA of its own at start.
	EgressCACert, EgressCAKey string
	// FastLane gives each sandbox of a local engine a fast lane to the
	// bridge (MCP_BRIDGE_FAST_LANE=1), made by the command under LaneDir
	// (MCP_BRIDGE_FAST_LANE_DIR). Zero: the engine's stream only; a
	// zero LaneDir is entrypoint.DefaultLaneRoot().
	FastLane bool
	LaneDir  string
	// OAuth are the authorization server's settings
	// (MCP_BRIDGE_OAUTH_*); nil without an issuer. The command makes the
	// verifier of HTTP.OAuth from them, with its logger.
	OAuth *oauth.Options
	// ObserveResultsSet reports whether MCP_BRIDGE_OBSERVE_RESULTS is
	// set: unset, stdio's `run` observes results and `serve -http` does
	// not (Bridge.ObserveResults is then its value).
	ObserveResultsSet bool
}

// Load reads the settings from getenv (os.Getenv when nil). Every invalid
// variable is reported, each by name, in one error wrapping ErrInvalid.
func Load(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	r := &reader{getenv: getenv}
	c := &Config{}
	c.LogLevel = r.logLevel(EnvLogLevel)
	c.LogFormat = r.logFormat(EnvLogFormat)
	c.DrainTimeout = r.seconds(EnvDrainTimeout, 0, 3600, "want whole seconds from 0 to 3600, such as 30")
	if r.set(EnvDrainTimeout) && c.DrainTimeout == 0 {
		c.DrainTimeout = -1
	}
	c.Engine.Backend = r.backend(EnvRuntime)
	c.Engine.AllowWeakLimits = r.flag(EnvAllowWeakLimits)
	c.Engine.Kubernetes = engine.KubernetesOptions{Namespace: r.k8sName(EnvK8sNamespace), RuntimeClass: r.k8sName(EnvK8sRuntimeClass),
		Owner: r.podOwner()}
	c.Engine.Kubernetes.SandboxTemplate = r.k8sName(EnvK8sTemplate)
	c.Engines = r.engines(EnvEngines)
	if len(c.Engines) > 0 && r.set(EnvRuntime) {
		r.errs = append(r.errs, fmt.Errorf("%s and %s are both set: set one (%s may list one engine)",
			EnvEngines, EnvRuntime, EnvEngines))
	}
	spec := engine.Spec{
		Image:       r.image(EnvImage),
		User:        r.user(EnvUser),
		MemoryBytes: r.memory(EnvMemory),
		PidsLimit:   r.pids(EnvPids),
		NanoCPUs:    r.cpus(EnvCPUs),
		OCIRuntime:  r.ociRuntime(EnvOCIRuntime),
		NoFile:      capRlimit(rlimitNoFile, defaultNoFile),
		NProc:       capRlimit(rlimitNProc, defaultNProc),
	}
	// The setting's 0 (or less) means "never stop", the session's negative.
	idle := r.idleSeconds(EnvIdle, 365*24*3600)
	c.Session = entrypoint.Options{
		Spec:           spec,
		IdleTimeout:    idle,
		MaxOutputBytes: int(r.size(EnvMaxOutput, 1<<10, 1<<30, "want a size from 1k to 1g, such as 1m")),
		MaxImages:      int(r.integer(EnvMaxImages, 0, 1000, "want a whole number from 0 to 1000")),
		MaxImageBytes:  r.size(EnvMaxImageBytes, 1<<10, 1<<30, "want a size from 1k to 1g, such as 8m"),
		InputDir:       r.dir(EnvInputDir),
		InputMaxBytes:  r.size(EnvInputMaxBytes, 1<<10, 16<<30, "want a size from 1k to 16g, such as 64m"),
	}
	if r.set(EnvMaxImages) && c.Session.MaxImages == 0 {
		c.Session.MaxImages = -1 // the setting's 0 is "none", the session's negative
	}
	defTimeout := r.timeout(EnvTimeout)
	maxTimeout := r.timeout(EnvMaxTimeout)
	c.Bridge = mcpbridge.Options{
		Session:        c.Session,
		DefaultTimeout: defTimeout,
		MaxTimeout:     maxTimeout,
		OutputMode:     r.outputMode(EnvOutputMode),
		ToolResults:    r.toolResults(EnvToolResults),
		OutputBudget:   int(r.size(EnvOutputBudget, 1<<10, 1<<30, "want a size from 1k to 1g, such as 32k")),
		Discovery: discovery.Options{
			StateDir:      r.path(EnvStateDir),
			ServersConfig: r.path(EnvServersConfig),
			AllowSelf:     r.originalFlag(EnvAllowSelfServer),
		},
	}
	c.Bridge.PoolSize = defaultPoolSize
	if r.set(EnvPoolSize) {
		c.Bridge.PoolSize = int(r.integer(EnvPoolSize, 0, 64, "want a whole number from 0 to 64 (0: no warm pool)"))
	}
	c.Bridge.Replica = r.replica(EnvReplica)
	c.Bridge.PolicyFile = r.path(EnvPolicy)
	c.Bridge.SearchKeywordsFile = r.path(r.renamed(EnvSearchKeywords, EnvSearchAliases))
	c.AuditLog = r.path(EnvAuditLog)
	c.EgressCACert, c.EgressCAKey = r.pathPair(EnvEgressCA)
	c.FastLane = r.flag(EnvFastLane)
	c.Bridge.ObserveResults = r.flag(EnvObserveResults)
	r.snapshots(&c.Bridge, c.FastLane, c.Session.InputDir != "")
	c.ObserveResultsSet = r.set(EnvObserveResults)
	c.LaneDir = r.path(EnvFastLaneDir)
	c.Bridge.Packages = r.packageOptions()
	c.Bridge.Packages.WheelDir = filepath.Join(discovery.NewRegistry(c.Bridge.Discovery).StateDir(), "pip")
	c.Audit.MaxBytes = r.size(EnvAuditMaxBytes, 4<<10, 1<<40, "want a size of at least 4k, such as 64m")
	c.Bridge.MaxQueuedCalls = int(r.integer(EnvMaxQueuedCalls, 1, 1000, "want a whole number from 1 to 1000"))
	sessionIdle := r.seconds(EnvSessionIdle, 0, 365*24*3600, "want whole seconds, such as 1800 (0: never)")
	c.HTTP = mcpbridge.HTTPOptions{
		Token:              r.token(EnvHTTPToken),
		AllowedHosts:       r.list(EnvAllowedHosts, validHost, "want host or host:port names, comma-separated"),
		AllowedOrigins:     r.list(EnvAllowedOrigins, validOrigin, "want origins such as https://app.example.com, comma-separated"),
		MaxSessions:        int(r.integer(EnvMaxSessions, 1, 100000, "want a whole number of at least 1")),
		SessionIdleTimeout: sessionIdle,
		OpenProbes:         r.flag(EnvOpenProbes),
	}
	c.OAuth = r.oauthOptions()
	c.Bridge.PersonMaxSandboxes = int(r.integer(EnvPersonSandboxes, 0, 100000, "want a whole number of sandboxes (0: no limit of its own)"))
	c.Bridge.PersonCallsPerMinute = int(r.integer(EnvPersonCalls, 0, 1_000_000, "want a whole number of calls a minute (0: no limit)"))
	c.HTTP.ConsoleToken = r.consoleToken(EnvConsoleToken, c.HTTP.Token)
	c.HTTP.ConsoleSecureCookie = r.flag(EnvConsoleSecureCookie)
	if c.HTTP.MaxSessions == 0 {
		c.HTTP.MaxSessions = defaultMaxSessions(spec.MemoryBytes)
	}
	if r.set(EnvSessionIdle) && sessionIdle == 0 {
		c.HTTP.SessionIdleTimeout = -1
	}
	c.Bridge.Handles = mcpbridge.HandleOptions{
		Key:          r.handleKey(EnvHandleKey),
		MaxPerClient: int(r.integer(EnvMaxHandles, 1, 100000, "want a whole number of at least 1")),
		IdleTimeout:  c.HTTP.SessionIdleTimeout,
	}
	c.Bridge.Tasks = mcpbridge.TaskOptions{
		After:         r.taskAfter(EnvTaskAfter),
		TTL:           r.seconds(EnvTaskTTL, 1, 30*24*3600, "want whole seconds, such as 3600"),
		Max:           int(r.integer(EnvMaxTasks, 1, 100000, "want a whole number of at least 1")),
		MaxPerSandbox: int(r.integer(EnvMaxSandboxTasks, 1, 16, "want a whole number from 1 to 16")),
	}
	if len(r.errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(r.errs...))
	}
	c.Warnings = r.warns
	c.Deprecations = r.deprecations
	return c, nil
}

// ErrInvalid reports settings that failed validation.
var ErrInvalid = errors.New("invalid settings")

// SandboxSpec returns the spec of a sandbox for session running cmd.
func (c *Config) SandboxSpec(session string, cmd []string) engine.Spec {
	s := c.Session.Spec
	s.Session = session
	s.Cmd = cmd
	return s
}

// Logger returns a logger on w in the configured format (text unless
// MCP_BRIDGE_LOG_FORMAT=json: one JSON object per line) at the configured
// level, else def, and logs the Warnings and Deprecations on it.
func (c *Config) Logger(w io.Writer, def slog.Level) *slog.Logger {
	level := def
	if c.LogLevel != nil {
		level = *c.LogLevel
	}
	opts := &slog.HandlerOptions{Level: level}
	log := slog.New(slog.NewTextHandler(w, opts))
	if c.LogFormat == LogJSON {
		log = slog.New(slog.NewJSONHandler(w, opts))
	}
	for _, warning := range c.Warnings {
		log.Warn("a setting is taken as the original bridge took it", "setting", warning)
	}
	for _, d := range c.Deprecations {
		log.Warn("a deprecated setting is used", "setting", d)
	}
	return log
}
