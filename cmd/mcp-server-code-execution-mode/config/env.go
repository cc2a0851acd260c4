package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// The environment variables Load reads: the original bridge's names, and
// the ones this bridge adds.
const (
	EnvLogLevel        = "MCP_BRIDGE_LOG_LEVEL"
	EnvRuntime         = "MCP_BRIDGE_RUNTIME"
	EnvImage           = "MCP_BRIDGE_IMAGE"
	EnvUser            = "MCP_BRIDGE_CONTAINER_USER"
	EnvMemory          = "MCP_BRIDGE_MEMORY"
	EnvPids            = "MCP_BRIDGE_PIDS"
	EnvCPUs            = "MCP_BRIDGE_CPUS"
	EnvOCIRuntime      = "MCP_BRIDGE_OCI_RUNTIME"
	EnvIdle            = "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT"
	EnvMaxOutput       = "MCP_BRIDGE_MAX_OUTPUT"
	EnvTimeout         = "MCP_BRIDGE_TIMEOUT"
	EnvMaxTimeout      = "MCP_BRIDGE_MAX_TIMEOUT"
	EnvOutputMode      = "MCP_BRIDGE_OUTPUT_MODE"
	EnvOutputBudget    = "MCP_BRIDGE_OUTPUT_BUDGET"
	EnvStateDir        = "MCP_BRIDGE_STATE_DIR"
	EnvServersConfig   = "MCP_SERVERS_CONFIG"
	EnvAllowSelfServer = "MCP_BRIDGE_ALLOW_SELF_SERVER"
	EnvMaxImages       = "MCP_BRIDGE_MAX_IMAGES"
	EnvMaxImageBytes   = "MCP_BRIDGE_MAX_IMAGE_BYTES"
	EnvInputDir        = "MCP_BRIDGE_INPUT_DIR"
	EnvInputMaxBytes   = "MCP_BRIDGE_INPUT_MAX_BYTES"
	EnvHTTPToken       = "MCP_BRIDGE_HTTP_TOKEN"
	EnvOAuthIssuer     = "MCP_BRIDGE_OAUTH_ISSUER"
	EnvOAuthResource   = "MCP_BRIDGE_OAUTH_RESOURCE"
	EnvOAuthAudience   = "MCP_BRIDGE_OAUTH_AUDIENCE"
	EnvOAuthScopes     = "MCP_BRIDGE_OAUTH_SCOPES"
	EnvOAuthClientID   = "MCP_BRIDGE_OAUTH_CLIENT_ID"
	EnvOAuthSecret     = "MCP_BRIDGE_OAUTH_CLIENT_SECRET"
	EnvPersonCalls     = "MCP_BRIDGE_PERSON_CALLS_PER_MINUTE"
	EnvPersonSandboxes = "MCP_BRIDGE_PERSON_MAX_SANDBOXES"
	EnvAllowedHosts    = "MCP_BRIDGE_HTTP_ALLOWED_HOSTS"
	EnvAllowedOrigins  = "MCP_BRIDGE_HTTP_ALLOWED_ORIGINS"
	EnvMaxSessions     = "MCP_BRIDGE_MAX_SESSIONS"
	EnvSessionIdle     = "MCP_BRIDGE_SESSION_IDLE_TIMEOUT"
	EnvPoolSize        = "MCP_BRIDGE_POOL_SIZE"
	EnvMaxQueuedCalls  = "MCP_BRIDGE_MAX_QUEUED_CALLS"
	EnvLogFormat       = "MCP_BRIDGE_LOG_FORMAT"
	EnvDrainTimeout    = "MCP_BRIDGE_DRAIN_TIMEOUT"
	EnvEngines         = "MCP_BRIDGE_ENGINES"
	EnvOpenProbes      = "MCP_BRIDGE_HTTP_OPEN_PROBES"
	EnvReplica         = "MCP_BRIDGE_HTTP_REPLICA"
	EnvHandleKey       = "MCP_BRIDGE_HANDLE_KEY"
	EnvConsoleToken    = "MCP_BRIDGE_CONSOLE_TOKEN"
	// EnvConsoleSecureCookie marks the console's cookie Secure behind a
	// proxy that terminates TLS.
	EnvConsoleSecureCookie = "MCP_BRIDGE_CONSOLE_SECURE_COOKIE"
	EnvMaxHandles          = "MCP_BRIDGE_MAX_HANDLES"
	EnvK8sNamespace        = "MCP_BRIDGE_K8S_NAMESPACE"
	EnvK8sRuntimeClass     = "MCP_BRIDGE_K8S_RUNTIME_CLASS"
	EnvK8sTemplate         = "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE"
	EnvPodNamespace        = "MCP_BRIDGE_POD_NAMESPACE"
	EnvPodName             = "MCP_BRIDGE_POD_NAME"
	EnvPodUID              = "MCP_BRIDGE_POD_UID"
	EnvTaskAfter           = "MCP_BRIDGE_TASK_AFTER"
	EnvTaskTTL             = "MCP_BRIDGE_TASK_TTL"
	EnvMaxTasks            = "MCP_BRIDGE_MAX_TASKS"
	EnvMaxSandboxTasks     = "MCP_BRIDGE_MAX_TASKS_PER_SANDBOX"
	EnvToolResults         = "MCP_BRIDGE_TOOL_RESULTS"
	EnvObserveResults      = "MCP_BRIDGE_OBSERVE_RESULTS"
	EnvSnapshots           = "MCP_BRIDGE_SNAPSHOTS"
	EnvSnapshotMax         = "MCP_BRIDGE_SNAPSHOT_MAX"
	EnvSnapshotTTL         = "MCP_BRIDGE_SNAPSHOT_TTL"
	EnvMaxForks            = "MCP_BRIDGE_MAX_FORKS"
	EnvPolicy              = "MCP_BRIDGE_POLICY"
	EnvSearchKeywords      = "MCP_BRIDGE_SEARCH_KEYWORDS"
	EnvAuditLog            = "MCP_BRIDGE_AUDIT_LOG"
	EnvAuditMaxBytes       = "MCP_BRIDGE_AUDIT_MAX_BYTES"
	EnvEgressCA            = "MCP_BRIDGE_EGRESS_CA"
	EnvPackages            = "MCP_BRIDGE_PACKAGES"
	EnvPackagesFile        = "MCP_BRIDGE_PACKAGES_FILE"
	EnvPipIndexURL         = "MCP_BRIDGE_PIP_INDEX_URL"
	EnvPipExtraIndex       = "MCP_BRIDGE_PIP_EXTRA_INDEX_URL"
	EnvPipFileHosts        = "MCP_BRIDGE_PIP_FILE_HOSTS"
	EnvPipAllowSdist       = "MCP_BRIDGE_PIP_ALLOW_SDIST"
	EnvPipWheel            = "MCP_BRIDGE_PIP_WHEEL"
	EnvPackagesCache       = "MCP_BRIDGE_PACKAGES_CACHE_MAX"
	EnvPackagesSession     = "MCP_BRIDGE_PACKAGES_SESSION_MAX"
	EnvFastLane            = "MCP_BRIDGE_FAST_LANE"
	EnvAllowWeakLimits     = "MCP_BRIDGE_ALLOW_WEAK_LIMITS"
	EnvFastLaneDir         = "MCP_BRIDGE_FAST_LANE_DIR"
)

// The deprecated names of variables Load reads when the new name is
// unset, with a deprecation (Config.Deprecations).
const (
	// EnvSearchAliases is EnvSearchKeywords' former name.
	EnvSearchAliases = "MCP_BRIDGE_SEARCH_ALIASES"
)

// Log formats of MCP_BRIDGE_LOG_FORMAT.
const (
	LogText = "text"
	LogJSON = "json"
)

// minTokenLength is the shortest bearer token accepted.
const minTokenLength = 16

// defaultPoolSize is the warm pool of a bridge serving HTTP when
// MCP_BRIDGE_POOL_SIZE is unset.
const defaultPoolSize = 2

// Sandbox rlimits, lowered to this process's hard limits.
const (
	defaultNoFile = 1024
	defaultNProc  = 1024
	rlimitNoFile  = unix.RLIMIT_NOFILE
	rlimitNProc   = unix.RLIMIT_NPROC
)

// A reader reads variables and collects what is wrong with them.
type reader struct {
	getenv func(string) string
	errs   []error
	// warns are values accepted as something else, as the original
	// bridge took them (see warn).
	warns []string
	// deprecations are deprecated variables in use (see renamed).
	deprecations []string
}

// get returns the variable name, trimmed. It panics when name is not in
// the settings table (settings.go): every variable read is documented.
func (r *reader) get(name string) string { return strings.TrimSpace(r.getenv(documented(name))) }

// set reports whether the variable name is set to something.
func (r *reader) set(name string) bool { return r.get(name) != "" }

// bad records that name=val is invalid, with what is wanted.
func (r *reader) bad(name, val, want string) {
	r.errs = append(r.errs, fmt.Errorf("%s=%q: %s", name, val, want))
}

// logLevel reads a level: slog's names, and Python logging's names and
// numbers as the original bridge accepts them (WARNING, CRITICAL, FATAL,
// NOTSET, 10–50).
func (r *reader) logLevel(name string) *slog.Level {
	v := r.get(name)
	if v == "" {
		return nil
	}
	var l slog.Level
	switch strings.ToUpper(v) {
	case "NOTSET", "DEBUG":
		l = slog.LevelDebug
	case "INFO":
		l = slog.LevelInfo
	case "WARN", "WARNING":
		l = slog.LevelWarn
	case "ERROR":
		l = slog.LevelError
	case "CRITICAL", "FATAL":
		l = slog.LevelError + 4
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 50 {
			r.bad(name, v, "want DEBUG, INFO, WARNING, ERROR or CRITICAL (or WARN, FATAL, NOTSET, or a Python level number 0–50)")
			return nil
		}
		// Python: NOTSET 0, DEBUG 10, INFO 20, WARNING 30, ERROR 40, CRITICAL 50.
		switch {
		case n <= 10:
			l = slog.LevelDebug
		case n <= 20:
			l = slog.LevelInfo
		case n <= 30:
			l = slog.LevelWarn
		case n <= 40:
			l = slog.LevelError
		default:
			l = slog.LevelError + 4
		}
	}
	return &l
}

// logFormat reads LogText or LogJSON; "" when unset.
func (r *reader) logFormat(name string) string {
	v := strings.ToLower(r.get(name))
	switch v {
	case "", LogText, LogJSON:
		return v
	}
	r.bad(name, v, "want text or json")
	return ""
}

// engines reads a list of engine endpoints; unset is none. The
// variable's value is left out of the error (it may be long): the
// parser's message names the entry.
func (r *reader) engines(name string) []engine.Endpoint {
	if !r.set(name) {
		return nil
	}
	eps, err := engine.ParseEndpoints(r.get(name))
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", name, err))
		return nil
	}
	return eps
}

// replica reads the name of a replica: 1 to 32 lower-case letters,
// digits and hyphens, so that it is safe in a header and in a proxy's
// pattern.
func (r *reader) replica(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	ok := len(v) <= 32
	for _, c := range v {
		ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')
	}
	if !ok {
		r.bad(name, v, "want 1 to 32 lower-case letters, digits and hyphens, such as bridge-1")
		return ""
	}
	return v
}

// image reads an image reference.
func (r *reader) image(name string) string {
	v := r.get(name)
	if strings.ContainsAny(v, " \t\n") {
		r.bad(name, v, "want an image reference such as python:3.14-slim")
		return ""
	}
	return v
}

// user reads "uid" or "uid:gid" with numeric, non-root IDs.
func (r *reader) user(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	uid, gid, hasGID := strings.Cut(v, ":")
	ids := []string{uid}
	if hasGID {
		ids = append(ids, gid)
	}
	for _, id := range ids {
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			r.bad(name, v, "want numeric uid:gid such as 65534:65534 (user names are not resolved: the sandbox's "+
				"tmpfs mounts are owned by these numbers, and a name may be root in the image)")
			return ""
		}
		if n == 0 {
			r.bad(name, v, "running the sandbox as root (0) is not allowed")
			return ""
		}
	}
	return v
}

// size reads a size such as 512m, from lo to hi bytes; 0 when unset.
func (r *reader) size(name string, lo, hi int64, want string) int64 {
	v := r.get(name)
	if v == "" {
		return 0
	}
	n, err := units.RAMInBytes(v)
	if err != nil || n < lo || n > hi {
		r.bad(name, v, want)
		return 0
	}
	return n
}

// integer reads a whole number from lo to hi, as Python's int() spells
// it ("+8", "1_000"); 0 when unset.
func (r *reader) integer(name string, lo, hi int64, want string) int64 {
	v := r.get(name)
	if v == "" {
		return 0
	}
	n, err := pyInt(v)
	if err != nil || n < lo || n > hi {
		r.bad(name, v, want)
		return 0
	}
	return n
}

// seconds reads whole seconds from lo to hi; 0 when unset.
func (r *reader) seconds(name string, lo, hi int64, want string) time.Duration {
	return time.Duration(r.integer(name, lo, hi, want)) * time.Second
}

// k8sName reads a Kubernetes object name (a DNS label: lower-case letters,
// digits and '-', at most 63, beginning and ending with a letter or digit).
func (r *reader) k8sName(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	ok := len(v) <= 63
	for i := 0; ok && i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		ok = alnum || c == '-' && i > 0 && i < len(v)-1
	}
	if !ok {
		r.bad(name, v, "want a Kubernetes name: lower-case letters, digits and '-', at most 63")
		return ""
	}
	return v
}

// podOwner reads the pod the bridge runs in, from the three variables a
// manifest fills from the downward API: all three or none.
func (r *reader) podOwner() engine.PodRef {
	p := engine.PodRef{Namespace: r.k8sName(EnvPodNamespace), Name: r.get(EnvPodName), UID: r.get(EnvPodUID)}
	if p == (engine.PodRef{}) {
		return p
	}
	if p.Name != "" && !podName(p.Name) {
		r.bad(EnvPodName, p.Name, "want a pod's name of at most 63 characters (it labels the sandboxes): lower-case letters, digits, '-' and '.'")
		return engine.PodRef{}
	}
	if p.UID != "" && !podUID(p.UID) {
		r.bad(EnvPodUID, p.UID, "want a pod's UID, such as 6f1c1d3e-0c6b-4a57-9d2b-2b8f0e1f4a10 (the downward API's metadata.uid)")
		return engine.PodRef{}
	}
	if p.Namespace == "" || p.Name == "" || p.UID == "" {
		r.errs = append(r.errs, fmt.Errorf("%s, %s and %s name the bridge's own pod (set them from the downward API): set all three or none",
			EnvPodNamespace, EnvPodName, EnvPodUID))
		return engine.PodRef{}
	}
	return p
}

// podName reports whether v is a valid pod name (a DNS subdomain) that
// is also a label value: at most 63 characters.
func podName(v string) bool {
	if len(v) == 0 || len(v) > 63 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' && c != '.' || i == 0 || i == len(v)-1) {
			return false
		}
	}
	return true
}

// podUID reports whether v looks like a Kubernetes UID: 36 characters of
// lower-case hexadecimal digits and '-'.
func podUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// taskAfter reads the call timeout above which a call becomes a task:
// whole seconds, 0 for every call, "off" for none; 0 when unset (the
// default).
func (r *reader) taskAfter(name string) time.Duration {
	v := strings.ToLower(r.get(name))
	switch v {
	case "":
		return 0
	case "off", "never", "no":
		return -1
	case "0":
		return time.Nanosecond
	}
	return r.seconds(name, 1, 365*24*3600, `want whole seconds, such as 60 (0: every call; "off": no tasks)`)
}

// ociRuntime reads the name of an OCI runtime the engine knows.
func (r *reader) ociRuntime(name string) string {
	v := r.get(name)
	if strings.ContainsAny(v, " \t\n/") {
		r.bad(name, v, "want the name of an OCI runtime the engine knows, such as runsc")
		return ""
	}
	return v
}

// path reads a file path, "~" expanded (see expandHome) and made absolute
// against the working directory (the file need not exist yet).
func (r *reader) path(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	abs, err := filepath.Abs(expandHome(v))
	if err != nil {
		r.bad(name, v, "want a file path ("+err.Error()+")")
		return ""
	}
	return abs
}

// pathPair reads two file paths separated by a comma (a certificate and
// its key); none when unset.
func (r *reader) pathPair(name string) (string, string) {
	v := r.get(name)
	if v == "" {
		return "", ""
	}
	first, second, ok := strings.Cut(v, ",")
	first, second = strings.TrimSpace(first), strings.TrimSpace(second)
	if !ok || first == "" || second == "" || strings.Contains(second, ",") {
		r.bad(name, v, "want CERT.pem,KEY.pem: the CA's certificate and key files, comma-separated")
		return "", ""
	}
	a, errA := filepath.Abs(expandHome(first))
	b, errB := filepath.Abs(expandHome(second))
	if errA != nil || errB != nil {
		r.bad(name, v, "want CERT.pem,KEY.pem file paths")
		return "", ""
	}
	return a, b
}

// renamed is the variable to read of name and its deprecated former
// name old: name when it is set or old is not, else old, with a
// deprecation that names name.
func (r *reader) renamed(name, old string) string {
	if r.set(name) || !r.set(old) {
		return name
	}
	r.deprecations = append(r.deprecations, old+" is deprecated: use "+name)
	return old
}

// dir reads the path of an existing directory, "~" expanded and made
// absolute; "" when unset.
func (r *reader) dir(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	abs, err := filepath.Abs(expandHome(v))
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(abs); err == nil && !info.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		r.bad(name, v, "want an existing directory ("+err.Error()+")")
		return ""
	}
	return abs
}

// token reads a bearer token: at least minTokenLength visible ASCII
// characters; "" when unset.
func (r *reader) token(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	if !secretLike(v, minTokenLength) {
		r.bad(name, "(hidden)", fmt.Sprintf("want a token of at least %d visible ASCII characters, no spaces (such as the output of openssl rand -hex 32)", minTokenLength))
		return ""
	}
	return v
}

// handleKey reads the key of sandbox handles: at least handle.MinKeyLen
// visible ASCII characters, or unset.
func (r *reader) handleKey(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	if !secretLike(v, handle.MinKeyLen) {
		r.bad(name, "(hidden)", fmt.Sprintf("want a secret of at least %d visible ASCII characters, the same on every replica (such as the output of openssl rand -hex 32)", handle.MinKeyLen))
		return ""
	}
	return v
}

// secretLike reports whether v has at least least characters, all visible
// ASCII (no spaces), as a shared secret or token must be.
func secretLike(v string, least int) bool {
	if len(v) < least {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// list reads a comma-separated list of names matching valid; nil when
// unset.
func (r *reader) list(name string, valid func(string) bool, want string) []string {
	var out []string
	for _, item := range strings.Split(r.get(name), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !valid(item) {
			r.bad(name, item, want)
			continue
		}
		out = append(out, item)
	}
	return out
}

// validHost reports whether s is a host or host:port.
func validHost(s string) bool {
	return !strings.ContainsAny(s, "/ \t@?#") && len(s) <= 255
}

// validOrigin reports whether s is an origin: http(s)://host[:port].
func validOrigin(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "http://")
	}
	return ok && rest != "" && validHost(strings.TrimSuffix(rest, "/"))
}

// defaultMaxSessions is as many sandboxes as this machine's memory holds
// at each one's memory limit, at least 4 and at most 1000.
func defaultMaxSessions(limit int64) int {
	if limit <= 0 {
		limit = 512 << 20
	}
	total, ok := physicalMemory()
	if !ok {
		return 16
	}
	return int(min(max(total/limit, 4), 1000))
}

// flag reads a switch: "1" (or true, yes, on) turns it on; "0" (or
// false, no, off) or unset, off; any other value is refused.
func (r *reader) flag(name string) bool {
	return r.onOff(name, func(v string) { r.bad(name, v, "want 1 or 0") })
}

// onOff reads a switch, calling other with a value that is neither on
// nor off (which is then off).
func (r *reader) onOff(name string, other func(v string)) bool {
	switch v := strings.ToLower(r.get(name)); v {
	case "", "0", "false", "no", "off":
		return false
	case "1", "true", "yes", "on":
		return true
	default:
		other(v)
		return false
	}
}

// capRlimit returns want, lowered to this process's hard limit of res.
func capRlimit(res int, want uint64) uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(res, &rl); err != nil {
		return want
	}
	return min(want, rl.Max)
}
