package mcpbridge

import (
	"log/slog"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/tasks"
)

// Output modes of the tool's text content (Options.OutputMode).
const (
	OutputCompact = render.Compact
	OutputTOON    = render.TOON
)

// What a proxied tool call returns to sandbox code (Options.ToolResults).
const (
	// ToolResultsSimple returns the tool's structured result, else its
	// text, else its content list, and raises MCPError for a result that
	// is an error.
	ToolResultsSimple = "simple"
	// ToolResultsRaw returns the whole CallToolResult as a dict, as the
	// original bridge does: content, isError (always present),
	// structuredContent and _meta when the server sent them. A result
	// that is an error is returned, not raised.
	ToolResultsRaw = "raw"
)

// Defaults of Options' call timeouts.
const (
	defaultTimeout    = 30 * time.Second
	defaultMaxTimeout = 120 * time.Second
)

// Options configure a Bridge. The zero value serves with the defaults;
// the settings come from package config.
type Options struct {
	// Version is reported to clients and to proxied servers. Zero: "dev".
	Version string
	// Logger receives the bridge's logs. Zero: discarded.
	Logger *slog.Logger
	// Session is the template of every client's sandbox session: its
	// Spec, IdleTimeout and MaxOutputBytes (see entrypoint.Options). Its
	// Logger, RPC and Init are the bridge's own. Zero: the session's
	// defaults.
	Session entrypoint.Options
	// DefaultTimeout applies when a call gives none; it is capped by
	// MaxTimeout. Zero: 30 seconds.
	DefaultTimeout time.Duration
	// MaxTimeout caps every call's timeout. Zero: 120 seconds.
	MaxTimeout time.Duration
	// OutputMode is OutputCompact or OutputTOON. Zero: OutputCompact.
	OutputMode string
	// ToolResults is what a proxied tool call returns to sandbox code:
	// ToolResultsSimple or ToolResultsRaw (MCP_BRIDGE_TOOL_RESULTS).
	// Zero: ToolResultsSimple.
	ToolResults string
	// ObserveResults records and shows the shapes of the results of
	// proxied tools that declare no output schema
	// (servers.Options.ObserveResults; MCP_BRIDGE_OBSERVE_RESULTS). Zero:
	// off.
	ObserveResults bool
	// PersonMaxSandboxes bounds the sandboxes one client (a person with
	// OAuth, else a bearer token) holds at once on this replica: its MCP
	// sessions' and its handles' (MCP_BRIDGE_PERSON_MAX_SANDBOXES). Zero:
	// no bound of its own (MCP_BRIDGE_MAX_SESSIONS and
	// MCP_BRIDGE_MAX_HANDLES still hold).
	PersonMaxSandboxes int
	// PersonCallsPerMinute bounds the run_python calls one client (a
	// person with OAuth, else a bearer token) makes in a minute, on this
	// replica (MCP_BRIDGE_PERSON_CALLS_PER_MINUTE). Zero: no bound.
	PersonCallsPerMinute int
	// MaxForks bounds the copies one run_python call's fork makes, which
	// needs Session.Sleep (MCP_BRIDGE_SNAPSHOTS, MCP_BRIDGE_MAX_FORKS).
	// Zero: 4.
	MaxForks int
	// OutputBudget bounds the output a result's text and structured
	// content carry, in bytes: past it each stream keeps its head and
	// tail, and the whole output stays readable as a resource of the
	// session. Zero: 32 KiB.
	OutputBudget int
	// Discovery says where configured MCP servers are found. Zero: the
	// default locations. Ignored when Registry is set.
	Discovery discovery.Options
	// Registry finds the configured MCP servers. Zero: a Registry over
	// Discovery.
	Registry *discovery.Registry
	// PoolSize is how many started sandboxes the bridge keeps ready for
	// new client sessions, refilled in the background; each serves one
	// session only. Zero: none, a session's sandbox starts on its first
	// call.
	PoolSize int
	// PoolOnce starts the pool's sandboxes once, at New, and never
	// refills it: for a bridge with one client (stdio), whose first call
	// then finds its sandbox started. Zero: the pool is refilled.
	PoolOnce bool
	// Replica names this bridge among replicas behind one proxy: every
	// Mcp-Session-Id it issues begins with Replica and a dot, so that the
	// proxy can route a session's requests to the replica that holds it
	// by that prefix. Zero: session IDs are random only.
	Replica string
	// PolicyFile is the tool policy's file (JSON, or TOML when it ends in
	// .toml), read again whenever it changes; when it is missing, or
	// does not parse, every proxied tool call is refused. Zero:
	// policy.json (else policy.toml) in the state directory, where its
	// absence means no policy.
	PolicyFile string
	// SearchKeywordsFile is the operator's search keywords file (JSON:
	// words for the tools of their own servers, by server and tool), read
	// again whenever it changes; one that cannot be used is named in a
	// search's notes and searched without. Zero: search_keywords.json in
	// the state directory (else the deprecated search_aliases.json), where
	// its absence means none.
	SearchKeywordsFile string
	// Audit receives a record of every run_python call and every proxied
	// tool call. Zero: no records.
	Audit *audit.Log
	// EgressCA signs the certificates the egress gateway shows sandbox
	// code for the hosts it adds a secret to (MCP_BRIDGE_EGRESS_CA).
	// Zero: a CA made at New, in memory only.
	EgressCA *egress.CA
	// MaxQueuedCalls bounds the calls that wait in one session while
	// another runs; past it a call fails at once (live.ErrQueueFull).
	// Zero: 8.
	MaxQueuedCalls int
	// Packages are the package settings: the set every sandbox mounts,
	// installed once per configuration through the egress gateway, and
	// the indexes. Zero: no package set.
	Packages packages.Options
	// Handles configure the sandbox handles of protocol 2026-07-28 over
	// HTTP. Zero: the defaults of HandleOptions.
	Handles HandleOptions
	// Tasks configure the Tasks extension. Zero: the defaults of
	// TaskOptions.
	Tasks TaskOptions

	// searchWait is servers.Options.SearchWait, for the tests. Zero: its
	// default.
	searchWait time.Duration
}

// withDefaults returns o with every zero value replaced by its default.
func (o Options) withDefaults() Options {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = defaultMaxTimeout
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = defaultTimeout
	}
	o.DefaultTimeout = min(o.DefaultTimeout, o.MaxTimeout)
	if o.OutputBudget <= 0 {
		o.OutputBudget = render.DefaultBudget
	}
	if o.OutputMode == "" {
		o.OutputMode = OutputCompact
	}
	if o.ToolResults == "" {
		o.ToolResults = ToolResultsSimple
	}
	o.Handles = o.Handles.withDefaults()
	if o.Registry == nil {
		d := o.Discovery
		if d.Logger == nil {
			d.Logger = o.Logger
		}
		o.Registry = discovery.NewRegistry(d)
	}
	return o
}

// implementationName is the bridge's MCP implementation name, which
// discovery owns: it knows an entry that would start the bridge by it.
const implementationName = discovery.ImplementationName

// Defaults of HandleOptions.
const (
	defaultMaxHandles = 16
	defaultHandleIdle = 30 * time.Minute
)

// HandleOptions configure the sandbox handles of protocol 2026-07-28,
// which has no sessions: a run_python call without a handle starts a
// sandbox and its result carries the handle that continues it.
type HandleOptions struct {
	// Key authenticates handles (MCP_BRIDGE_HANDLE_KEY, at least 32
	// characters): replicas that share it resume each other's handles.
	// Zero: a random key, good for this process only.
	Key string
	// MaxPerClient bounds the live handles one client token (or, without
	// a token, all clients together) holds on this replica; a call that
	// would mint one more is refused. Zero: 16.
	MaxPerClient int
	// IdleTimeout ends a handle's sandbox after this long without a call
	// (MCP_BRIDGE_SESSION_IDLE_TIMEOUT). Zero: 30 minutes; negative:
	// never.
	IdleTimeout time.Duration
}

func (o HandleOptions) withDefaults() HandleOptions {
	if o.MaxPerClient <= 0 {
		o.MaxPerClient = defaultMaxHandles
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = defaultHandleIdle
	}
	return o
}

// TaskOptions configure the Tasks extension (io.modelcontextprotocol/tasks):
// a run_python call of a client that declares it may be answered with a
// task the client polls, answers and cancels. Their defaults are the
// tasks package's.
type TaskOptions = tasks.Options
