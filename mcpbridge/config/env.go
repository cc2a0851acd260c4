package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
	"golang.org/x/sys/unix"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
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
)

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
}

// get returns the variable name, trimmed.
func (r *reader) get(name string) string { return strings.TrimSpace(r.getenv(name)) }

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

// backend reads the engine's name; "" and "auto" auto-detect.
func (r *reader) backend(name string) string {
	switch v := strings.ToLower(r.get(name)); v {
	case "", "auto":
		return ""
	case engine.BackendDocker, engine.BackendPodman:
		return v
	default:
		r.bad(name, v, `want "docker", "podman" or unset (auto-detect)`)
		return ""
	}
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
			r.bad(name, v, "want numeric uid:gid such as 65534:65534")
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

// integer reads a whole number from lo to hi; 0 when unset.
func (r *reader) integer(name string, lo, hi int64, want string) int64 {
	v := r.get(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
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

// cpus reads a number of CPUs as billionths of a CPU; 0 when unset.
func (r *reader) cpus(name string) int64 {
	v := r.get(name)
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0.01 || f > 1024 {
		r.bad(name, v, "want a number of CPUs such as 1 or 0.5")
		return 0
	}
	return int64(math.Round(f * 1e9))
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

// outputMode reads the rendering of results' text.
func (r *reader) outputMode(name string) string {
	switch v := strings.ToLower(r.get(name)); v {
	case "":
		return ""
	case mcpbridge.OutputCompact, mcpbridge.OutputTOON:
		return v
	default:
		r.bad(name, v, "want compact or toon")
		return ""
	}
}

// dir reads the path of an existing directory, made absolute; "" when
// unset.
func (r *reader) dir(name string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	abs, err := filepath.Abs(v)
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

// flag reads a switch: "1" (or true, yes, on) turns it on.
func (r *reader) flag(name string) bool {
	switch v := strings.ToLower(r.get(name)); v {
	case "", "0", "false", "no", "off":
		return false
	case "1", "true", "yes", "on":
		return true
	default:
		r.bad(name, v, "want 1 or 0")
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
