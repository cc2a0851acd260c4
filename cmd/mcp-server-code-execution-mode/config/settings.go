package config

import (
	"fmt"
	"slices"
	"strings"
)

// This file is the one list of the settings: every variable Load reads is
// described here (reader.get refuses any other, and TestSettingsRead
// checks that Load reads every one described), and docs/SETTINGS.md is
// generated from it (see SettingsMarkdown).

// A Group is the settings the same people need, one table of
// docs/SETTINGS.md.
type Group int

// The groups, in the order docs/SETTINGS.md lists them.
const (
	// GroupEveryone is what anyone running the bridge may want to set.
	GroupEveryone Group = iota
	// GroupPolicy governs what sandbox code may reach and install.
	GroupPolicy
	// GroupServe is for serve -http: tokens, limits, the console.
	GroupServe
	// GroupEngines places sandboxes: several engines, Kubernetes, the
	// engines' own client variables.
	GroupEngines
	// GroupAdvanced is the rest: the sandbox's limits and output.
	GroupAdvanced
	numGroups
)

// groupText is each group's title and the sentence under it.
var groupText = [numGroups]struct{ title, intro string }{
	GroupEveryone: {"Everyone",
		"The engine, the image, time and memory, where servers are configured, the logs."},
	GroupPolicy: {"Policy, egress and packages",
		"What sandbox code may call, reach and install, and the record of it."},
	GroupServe: {"serve -http",
		"Serving many clients over Streamable HTTP: tokens, hosts, limits, handles, tasks, the console. `run` and `exec` ignore them (but `MCP_BRIDGE_POOL_SIZE`)."},
	GroupEngines: {"Engines and Kubernetes",
		"Where sandboxes run. `DOCKER_*` and `CONTAINER_*` are the engines' own variables, read by their clients as the docker and podman CLIs read them."},
	GroupAdvanced: {"Advanced",
		"The sandbox's limits and user, what a result carries, files in, the call queue, tool search."},
}

// Groups returns every group, in order.
func Groups() []Group {
	gs := make([]Group, numGroups)
	for i := range gs {
		gs[i] = Group(i)
	}
	return gs
}

// Title is the group's heading.
func (g Group) Title() string { return groupText[g].title }

// Intro is the sentence that introduces the group.
func (g Group) Intro() string { return groupText[g].intro }

// A Setting is the description of one environment variable: its name,
// its group, its default and what it does, as people read them
// (Markdown: `code`, links).
type Setting struct {
	Name  string
	Group Group
	// Default is what applies when the variable is unset.
	Default string
	// Help says in a line what the variable does and what values it
	// takes.
	Help string
	// Engine marks a variable of the engines' clients (DOCKER_HOST, …):
	// documented here, read by the engine backends rather than by Load.
	Engine bool
	// ReplacedBy names the setting that replaces this deprecated one.
	ReplacedBy string
}

// Secret reports whether the setting's value must not be shown: a token,
// key, secret or password.
func (s Setting) Secret() bool {
	for _, w := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD"} {
		if strings.Contains(s.Name, w) {
			return true
		}
	}
	return false
}

// Settings returns every setting, grouped, in the order of the docs.
func Settings() []Setting {
	out := slices.Clone(settings)
	slices.SortStableFunc(out, func(a, b Setting) int { return int(a.Group) - int(b.Group) })
	return out
}

// Lookup returns the setting named name.
func Lookup(name string) (Setting, bool) {
	s, ok := settingsByName[name]
	return s, ok
}

// settingsByName indexes settings.
var settingsByName = func() map[string]Setting {
	m := make(map[string]Setting, len(settings))
	for _, s := range settings {
		if _, dup := m[s.Name]; dup {
			panic(fmt.Sprintf("config: setting %s described twice", s.Name))
		}
		m[s.Name] = s
	}
	return m
}()

// documented returns name when it is a described setting Load reads, and
// panics otherwise: a variable cannot be read without being documented.
func documented(name string) string {
	if s, ok := settingsByName[name]; !ok || s.Engine {
		panic(fmt.Sprintf("config: reading %s, which is not in the settings table (settings.go)", name))
	}
	return name
}

// settings is every variable of the bridge, in its group's order.
var settings = []Setting{
	// Everyone.
	{Name: EnvRuntime, Group: GroupEveryone, Default: "auto",
		Help: "the engine: `docker`, `podman` or `kubernetes` (any case); unset or `auto` tries a Podman service that answers, then Docker, then starts a Podman service for the bridge. " +
			"A path or name of either binary (`/usr/bin/podman`, as the original took it) is taken as that engine, with a warning; its API is used, the binary is not run"},
	{Name: EnvImage, Group: GroupEveryone, Default: "`python:3.14-slim`",
		Help: "the sandbox image; pulled through the engine's API when missing"},
	{Name: EnvTimeout, Group: GroupEveryone, Default: "`30`",
		Help: "the default timeout of `run_python`, in seconds (`0` or less is taken as 1, with a warning, as the original clamps it)"},
	{Name: EnvMaxTimeout, Group: GroupEveryone, Default: "`120`",
		Help: "the ceiling of every timeout, in seconds (1 to 86400; values outside are taken as the nearest, with a warning)"},
	{Name: EnvMemory, Group: GroupEveryone, Default: "`512m`",
		Help: "the sandbox's memory limit, as `docker run --memory` takes it (`256m`, `1.5g`, `512MiB`, bytes; at least `6m`; `0`, no limit, is refused); no swap"},
	{Name: EnvStateDir, Group: GroupEveryone, Default: "`~/MCPs`",
		Help: "server configurations, memories and saved tools (`~` expanded; a relative path is taken from the working directory)"},
	{Name: EnvServersConfig, Group: GroupEveryone, Default: "none",
		Help: "one more MCP server configuration file, read last (`~` expanded)"},
	{Name: EnvLogLevel, Group: GroupEveryone, Default: "`INFO` (`WARN` for `exec` and `doctor`)",
		Help: "`DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL` (also `WARN`, `FATAL`, `NOTSET` or a Python level number 0–50, as the original accepts); logs go to stderr"},

	// Policy, egress and packages.
	{Name: EnvPolicy, Group: GroupPolicy, Default: "`policy.json` in the state directory",
		Help: "the tool policy file (JSON, or TOML for `*.toml`); when named here and missing or invalid, every proxied call is refused"},
	{Name: EnvAuditLog, Group: GroupPolicy, Default: "off",
		Help: "the file audit records are appended to (JSON lines); the bridge does not start when it cannot be opened"},
	{Name: EnvAuditMaxBytes, Group: GroupPolicy, Default: "`64m`",
		Help: "the size past which the audit log rotates (`.1` … `.5` kept)"},
	{Name: EnvEgressCA, Group: GroupPolicy, Default: "a CA made at start, in memory",
		Help: "`CERT.pem,KEY.pem`: the egress gateway's CA (an ECDSA key; `~` expanded), for replicas that share sandboxes; the key never leaves the bridge; a pair that cannot be loaded stops it at start"},
	{Name: EnvPackages, Group: GroupPolicy, Default: "none",
		Help: "packages every sandbox has: PEP 508 requirements separated by whitespace"},
	{Name: EnvPackagesFile, Group: GroupPolicy, Default: "none",
		Help: "the same from a requirements file (comments, `\\` continuations, `--hash`); set this or `MCP_BRIDGE_PACKAGES`, not both"},
	{Name: EnvPipIndexURL, Group: GroupPolicy, Default: "`https://pypi.org/simple/`",
		Help: "the index installs use (http or https, no credentials: a policy `inject` rule adds them)"},
	{Name: EnvPipExtraIndex, Group: GroupPolicy, Default: "none",
		Help: "more indexes, comma- or space-separated"},
	{Name: EnvPipFileHosts, Group: GroupPolicy, Default: "none",
		Help: "hosts (`host` or `host:port`, 443 by default; comma- or space-separated) where an index other than PyPI keeps its files: installs reach them too, never with a secret"},
	{Name: EnvPipAllowSdist, Group: GroupPolicy, Default: "`0`",
		Help: "`1` lets pip build packages that have no wheel (their build code runs)"},
	{Name: EnvPipWheel, Group: GroupPolicy, Default: "the image's pip, else pip 26.0.1 fetched from the index (sha256 pinned), kept in `~/MCPs/pip`",
		Help: "a pip wheel installs run pip from, whatever the image has"},
	{Name: EnvPackagesCache, Group: GroupPolicy, Default: "`10g`",
		Help: "how much the package volumes may hold; past it, after an install, the least recently used sets no container mounts are removed"},
	{Name: EnvPackagesSession, Group: GroupPolicy, Default: "`256m`",
		Help: "the size of a session's `runtime.install` space (a tmpfs: it counts against the sandbox's memory)"},

	// serve -http.
	{Name: EnvHTTPToken, Group: GroupServe, Default: "none",
		Help: "the bearer token every request must carry (at least 16 visible characters); required to listen beyond loopback"},
	{Name: EnvOAuthIssuer, Group: GroupServe, Default: "none",
		Help: "the OAuth 2.1 authorization server (its issuer URL: https, or http on loopback) whose access tokens `serve -http` accepts, as an MCP resource server: JWTs (`typ: at+jwt`) checked against its keys; each token's (issuer, subject) is the caller. Needs `MCP_BRIDGE_OAUTH_RESOURCE`; `MCP_BRIDGE_HTTP_TOKEN` may stay, as one fixed identity ([the guide](GUIDE.md#people-oauth))"},
	{Name: EnvOAuthResource, Group: GroupServe, Default: "none",
		Help: "this server's canonical resource URI, such as `https://mcp.example.com/mcp`, named in its Protected Resource Metadata and required in tokens' `aud`; never taken from `Host`"},
	{Name: EnvOAuthAudience, Group: GroupServe, Default: "the resource URI",
		Help: "the `aud` values of which a token must carry one (comma-separated), for providers that put the client ID there"},
	{Name: EnvOAuthScopes, Group: GroupServe, Default: "none",
		Help: "scopes every token must hold (space- or comma-separated); a token without one gets 403 `insufficient_scope`"},
	{Name: EnvOAuthClientID, Group: GroupServe, Default: "none (JWT access tokens only)",
		Help: "the bridge's client at the authorization server, with `MCP_BRIDGE_OAUTH_CLIENT_SECRET`: opaque access tokens are introspected with it (RFC 7662) at the issuer's `introspection_endpoint`"},
	{Name: EnvOAuthSecret, Group: GroupServe, Default: "none",
		Help: "the secret of `MCP_BRIDGE_OAUTH_CLIENT_ID` (HTTP Basic)"},
	{Name: EnvPersonSandboxes, Group: GroupServe, Default: "none",
		Help: "the sandboxes one client may hold at once (its MCP sessions and handles; a person with OAuth, else a bearer token), per replica; one more is refused naming the limit"},
	{Name: EnvPersonCalls, Group: GroupServe, Default: "none",
		Help: "the `run_python` calls one client may make in a minute (a person with OAuth, else a bearer token), per replica; one more is not run, saying when to try again"},
	{Name: EnvAllowedHosts, Group: GroupServe, Default: "none",
		Help: "`Host` values (`host` or `host:port`, comma-separated) served besides loopback names; on a loopback address any other `Host` is refused (DNS rebinding)"},
	{Name: EnvAllowedOrigins, Group: GroupServe, Default: "none",
		Help: "browser origins (`https://app.example.com`, comma-separated) that may call besides pages of the served host; any other `Origin` gets 403"},
	{Name: EnvOpenProbes, Group: GroupServe, Default: "`0`",
		Help: "`1` lets `/healthz` and `/metrics` answer without the token (Host and Origin checks still apply); `/mcp` always needs it"},
	{Name: EnvReplica, Group: GroupServe, Default: "none",
		Help: "this replica's name (`a-z`, `0-9`, `-`, at most 32), the prefix of every `Mcp-Session-Id` it issues, for a proxy routing sessions to replicas ([SCALING.md](../SCALING.md))"},
	{Name: EnvMaxSessions, Group: GroupServe, Default: "memory ÷ `MCP_BRIDGE_MEMORY` (4–1000)",
		Help: "MCP sessions served at once; one more gets HTTP 503 naming this variable"},
	{Name: EnvSessionIdle, Group: GroupServe, Default: "`1800`",
		Help: "seconds without a request after which a session ends and its sandbox and servers are removed; also a handle's sandbox's idle limit (`0`: never)"},
	{Name: EnvPoolSize, Group: GroupServe, Default: "`2`",
		Help: "started sandboxes kept ready for new sessions, each given to one session only (`0`: none); `run` starts its one sandbox at start unless this is `0`"},
	{Name: EnvHandleKey, Group: GroupServe, Default: "random, this process only",
		Help: "the secret (at least 32 visible characters) that authenticates sandbox handles; replicas that share it resume each other's handles"},
	{Name: EnvMaxHandles, Group: GroupServe, Default: "`16`",
		Help: "live handles one client token may hold on a replica; one more is refused, naming this variable"},
	{Name: EnvTaskAfter, Group: GroupServe, Default: "`60`",
		Help: "seconds of a call's timeout past which the call of a client declaring the Tasks extension becomes a task (`0`: every such call; `off`: no tasks)"},
	{Name: EnvTaskTTL, Group: GroupServe, Default: "`3600`",
		Help: "seconds a task and its result are kept after it ended"},
	{Name: EnvMaxTasks, Group: GroupServe, Default: "`256`",
		Help: "tasks (running, or ended and not expired) a replica keeps; one more is refused, naming this variable"},
	{Name: EnvMaxSandboxTasks, Group: GroupServe, Default: "`16`",
		Help: "the same per sandbox (at most 16)"},
	{Name: EnvDrainTimeout, Group: GroupServe, Default: "`30`",
		Help: "seconds a stopping server lets calls in flight finish before it ends their sessions (`0`: none); a second SIGTERM or SIGINT ends them at once"},
	{Name: EnvConsoleToken, Group: GroupServe, Default: "none (no console)",
		Help: "opens the operator's console at `/console` (at least 32 visible characters, not `MCP_BRIDGE_HTTP_TOKEN`)"},
	{Name: EnvConsoleSecureCookie, Group: GroupServe, Default: "`0`",
		Help: "`1` marks the console's cookie Secure on plain HTTP, behind a proxy that terminates TLS (else Secure under `-tls-cert` only)"},

	// Engines and Kubernetes.
	{Name: EnvEngines, Group: GroupEngines, Default: "none",
		Help: "several engines to place sandboxes on, the least loaded reachable first: each `docker`, `podman`, `BACKEND=ADDRESS`, `docker@CONTEXT` or `podman@CONNECTION`; set this or `MCP_BRIDGE_RUNTIME`, not both"},
	{Name: EnvOCIRuntime, Group: GroupEngines, Default: "the engine's default",
		Help: "an OCI runtime the engine knows, such as `runsc` for gVisor (a Podman service that ignores it is refused, not silently used)"},
	{Name: EnvAllowWeakLimits, Group: GroupEngines, Default: "`0`",
		Help: "`1` lets sandboxes start on an engine that cannot apply their memory, pids and CPU limits (rootless Podman or Docker on cgroup v1, or cgroup v2 without those controllers delegated); without it such an engine starts none and says why; `doctor` warns"},
	{Name: EnvFastLane, Group: GroupEngines, Default: "`0`",
		Help: "`1` gives each sandbox of a local Docker or Podman a Unix socket at `/run/mcp-lane` that carries its frames instead of the engine's stream (faster calls and downloads); where a sandbox cannot reach it the stream is used; `doctor` says which ([SECURITY.md](../SECURITY.md))"},
	{Name: EnvSnapshots, Group: GroupEngines, Default: "`0`",
		Help: "`1` puts a sandbox idle past `MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT` to sleep (its memory checkpointed to the engine's disk, its container stopped) instead of removing it, wakes it with its state at the next call, and lets `run_python` fork a sandbox (`fork`); Docker with gVisor only (`MCP_BRIDGE_OCI_RUNTIME=runsc`, the daemon in experimental mode); a checkpoint holds the session's memory on disk until it is woken or removed ([SECURITY.md](../SECURITY.md))"},
	{Name: EnvSnapshotMax, Group: GroupEngines, Default: "none (the memory limit bounds it)",
		Help: "a sandbox whose memory is over this size is not put to sleep: it stays awake, and the log says why"},
	{Name: EnvSnapshotTTL, Group: GroupEngines, Default: "`86400`",
		Help: "seconds a sandbox may sleep; then the clean-up removes it with its checkpoint"},
	{Name: EnvMaxForks, Group: GroupEngines, Default: "`4`",
		Help: "the most copies one `run_python` call's `fork` makes (1 to 16)"},
	{Name: EnvFastLaneDir, Group: GroupEngines, Default: "`/run/mcp-bridge/lanes` (root), else `$XDG_RUNTIME_DIR/mcp-bridge/lanes`",
		Help: "where the lanes' directories are made (a directory of the bridge's user, mode 0700)"},
	{Name: EnvK8sNamespace, Group: GroupEngines, Default: "`mcp-sandboxes`",
		Help: "`kubernetes`: the namespace of the sandbox pods"},
	{Name: EnvK8sRuntimeClass, Group: GroupEngines, Default: "the node's default",
		Help: "`kubernetes`: the pods' RuntimeClass, such as `gvisor`"},
	{Name: EnvK8sTemplate, Group: GroupEngines, Default: "none",
		Help: "`kubernetes`: each session is an agent-sandbox `SandboxClaim` of this `SandboxTemplate`; a template weaker than the bridge's own pod is refused at the first call ([deploy/agent-sandbox](../deploy/agent-sandbox/README.md))"},
	{Name: EnvPodNamespace, Group: GroupEngines, Default: "none",
		Help: "`kubernetes`, a bridge in a pod: its pod's namespace, from the downward API; with the next two it owns its sandboxes ([deploy](../deploy/README.md))"},
	{Name: EnvPodName, Group: GroupEngines, Default: "none",
		Help: "its pod's name (set all three or none)"},
	{Name: EnvPodUID, Group: GroupEngines, Default: "none",
		Help: "its pod's UID (set all three or none)"},
	{Name: "DOCKER_HOST", Group: GroupEngines, Engine: true, Default: "`unix:///var/run/docker.sock`",
		Help: "the Docker daemon: `unix://`, `tcp://` (with `DOCKER_TLS_VERIFY`, `DOCKER_CERT_PATH`) or `ssh://user@host`"},
	{Name: "DOCKER_CONTEXT", Group: GroupEngines, Engine: true, Default: "the current context of `~/.docker/config.json` (`$DOCKER_CONFIG`)",
		Help: "the Docker context to use when `DOCKER_HOST` is unset, with its TLS files; `default`: the default socket; one that does not exist is an error"},
	{Name: "CONTAINER_HOST", Group: GroupEngines, Engine: true, Default: "`unix:///run/podman/podman.sock` (root), then `$XDG_RUNTIME_DIR/podman/podman.sock`",
		Help: "the Podman service's URI: `unix://`, `tcp://` or `ssh://` (with `CONTAINER_SSHKEY` as the key)"},
	{Name: "CONTAINER_CONNECTION", Group: GroupEngines, Engine: true, Default: "none",
		Help: "a Podman connection (`podman system connection ls`), reached with its identity; wins over `CONTAINER_HOST`, as for podman"},

	// Advanced.
	{Name: EnvUser, Group: GroupAdvanced, Default: "`65534:65534`",
		Help: "the sandbox's numeric `uid` or `uid:gid`; root (0) and user names are refused"},
	{Name: EnvPids, Group: GroupAdvanced, Default: "`128`",
		Help: "processes and threads in the sandbox (at least 8; `0` and `-1`, no limit, are refused)"},
	{Name: EnvCPUs, Group: GroupAdvanced, Default: "no cap",
		Help: "the CPU limit, as `docker run --cpus` takes it: `1`, `0.5`, `3/2` (`0`: no cap)"},
	{Name: EnvIdle, Group: GroupAdvanced, Default: "`300`",
		Help: "seconds without a call before a session's sandbox is stopped (`0` or less: never)"},
	{Name: EnvMaxOutput, Group: GroupAdvanced, Default: "`1m`",
		Help: "output kept per call and stream, then a truncation marker"},
	{Name: EnvOutputBudget, Group: GroupAdvanced, Default: "`32k`",
		Help: "output a result carries; past it each stream keeps its head and tail, and the whole output is linked as `sandbox://output/N` for `resources/read`"},
	{Name: EnvOutputMode, Group: GroupAdvanced, Default: "`compact`",
		Help: "`compact` or `toon` (any other value is taken as `toon`, with a warning, as the original takes it)"},
	{Name: EnvObserveResults, Group: GroupAdvanced, Default: "`1` for `run` (stdio), `0` for `serve -http`",
		Help: "`1` records the shape of the results of proxied tools that declare no output schema (keys and value types over the calls, never values; in `~/MCPs/shapes`) and shows it in their docs; under `serve -http` the shapes would be shared by every client"},
	{Name: EnvToolResults, Group: GroupAdvanced, Default: "`simple`",
		Help: "what a proxied tool call returns in the sandbox: `simple` (its structured result, else its text, else its content; an error raises `MCPError`) or `raw` (the whole `CallToolResult` as a dict, as the original)"},
	{Name: EnvMaxImages, Group: GroupAdvanced, Default: "`10`",
		Help: "images one result carries (`display`, figures, images in `/workspace/out`); more are dropped with a note (`0`: none)"},
	{Name: EnvMaxImageBytes, Group: GroupAdvanced, Default: "`8m`",
		Help: "bytes of images one result carries; past it, as above"},
	{Name: EnvInputDir, Group: GroupAdvanced, Default: "none",
		Help: "a host directory copied, read-only, into `/workspace/in` whenever a session's sandbox starts (through the engine's API: remote engines and Kubernetes too)"},
	{Name: EnvInputMaxBytes, Group: GroupAdvanced, Default: "`64m`",
		Help: "bytes of files `MCP_BRIDGE_INPUT_DIR` may hold (and at most 10,000 entries); a larger directory fails the call"},
	{Name: EnvMaxQueuedCalls, Group: GroupAdvanced, Default: "`8`",
		Help: "calls of one session that may wait while another runs (they run one at a time, in order); one more fails at once"},
	{Name: EnvSearchKeywords, Group: GroupAdvanced, Default: "`search_keywords.json` in the state directory",
		Help: "your own keywords for your servers' tools, for `search_tool_docs`; read again when it changes"},
	{Name: EnvSearchAliases, Group: GroupAdvanced, Default: "none", ReplacedBy: EnvSearchKeywords,
		Help: "the former name of `MCP_BRIDGE_SEARCH_KEYWORDS`, read when that is unset, with a deprecation notice in the log"},
	{Name: EnvAllowSelfServer, Group: GroupAdvanced, Default: "`0`",
		Help: "`1` (or `true`, `yes`, `on`) keeps configured servers that would start this bridge itself; any other value is off"},
	{Name: EnvLogFormat, Group: GroupAdvanced, Default: "`text`",
		Help: "`json`: one JSON object per log line, with the same keys"},
}
