package config

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
)

// This file reads the settings the way the original bridge (the Python
// project) reads them, so that an environment written for it works here:
// whole numbers as Python's int() spells them, MCP_BRIDGE_RUNTIME as a
// binary's name or path, MCP_BRIDGE_CPUS as the engines' CLIs take it,
// "~" in paths, and the values the original took silently as something
// else (an unknown MCP_BRIDGE_OUTPUT_MODE, MCP_BRIDGE_ALLOW_SELF_SERVER)
// taken the same way with a warning. What the original accepted but would
// weaken the sandbox (no memory or pids limit, root) is refused by name.

// warn records that name=val is accepted, and what it is taken as.
func (r *reader) warn(name, val, msg string) {
	r.warns = append(r.warns, fmt.Sprintf("%s=%q: %s", name, val, msg))
}

// pyIntSyntax is a whole number as Python's int() reads it: a sign, then
// digits with single underscores between them.
var pyIntSyntax = regexp.MustCompile(`^[+-]?[0-9]+(_[0-9]+)*$`)

// pyInt parses s as Python's int(s) does (surrounding spaces are already
// trimmed): "+30", "007", "1_000". Beyond int64 it returns the nearest
// bound with an error wrapping strconv.ErrRange.
func pyInt(s string) (int64, error) {
	if !pyIntSyntax.MatchString(s) {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
}

// timeout reads the whole seconds of a call timeout (MCP_BRIDGE_TIMEOUT,
// MCP_BRIDGE_MAX_TIMEOUT); 0 when unset. The original takes any whole
// number and clamps every call's timeout to at least 1 second; so does
// this bridge, up to a day, with a warning when the value is out of that
// range.
func (r *reader) timeout(name string) time.Duration {
	const hi = 24 * 3600
	v := r.get(name)
	if v == "" {
		return 0
	}
	n, err := pyInt(v)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		r.bad(name, v, "want whole seconds, such as 30")
		return 0
	case n < 1:
		r.warn(name, v, "taken as 1: a call's timeout is at least 1 second, as in the original")
		n = 1
	case n > hi:
		r.warn(name, v, "taken as 86400: a call's timeout is at most a day")
		n = hi
	}
	return time.Duration(n) * time.Second
}

// idleSeconds reads MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT: whole seconds, 0 or
// less (as the original, which takes max(0, value)) for never; a value
// past hi is taken as hi with a warning. It returns 0 when unset, and a
// negative duration for never.
func (r *reader) idleSeconds(name string, hi int64) time.Duration {
	v := r.get(name)
	if v == "" {
		return 0
	}
	n, err := pyInt(v)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		r.bad(name, v, "want whole seconds, such as 300 (0: never stop)")
		return 0
	case n <= 0:
		return -1
	case n > hi:
		r.warn(name, v, fmt.Sprintf("taken as %d (a year)", hi))
		n = hi
	}
	return time.Duration(n) * time.Second
}

// memory reads the sandbox's memory limit as docker run --memory and
// podman run --memory take it ("512m", "1g", "512MiB", "1.5g", bytes);
// 0 when unset. The engines' 0 (no limit) is refused: every sandbox has
// a memory limit.
func (r *reader) memory(name string) int64 {
	if n, err := pyInt(r.get(name)); err == nil && n == 0 {
		r.bad(name, r.get(name), "0 (no memory limit) is not allowed: every sandbox has a memory limit; want a size of at least 6m, such as 512m or 1g")
		return 0
	}
	return r.size(name, 6<<20, 1<<40, "want a size of at least 6m, such as 512m or 1g")
}

// pids reads the sandbox's pids limit; 0 when unset. The engines' 0 and
// -1 (no limit), which the original passed on, are refused.
func (r *reader) pids(name string) int64 {
	const lo, hi = 8, 1 << 22
	v := r.get(name)
	if v == "" {
		return 0
	}
	n, err := pyInt(v)
	switch {
	case err != nil:
		r.bad(name, v, "want a whole number of at least 8, such as 128")
		return 0
	case n <= 0:
		r.bad(name, v, "no pids limit is not allowed: every sandbox has one; want a whole number of at least 8, such as 128")
		return 0
	case n < lo || n > hi:
		r.bad(name, v, "want a whole number of at least 8 (the sandbox's runtime needs a few processes and threads), such as 128")
		return 0
	}
	return n
}

// cpus reads a number of CPUs as billionths of a CPU, as docker run
// --cpus takes it ("1.5", "0.5", "2", "3/2"); 0 when unset, and for "0",
// which the engines (and so the original) take as no limit.
func (r *reader) cpus(name string) int64 {
	v := r.get(name)
	if v == "" {
		return 0
	}
	q, ok := new(big.Rat).SetString(v)
	if !ok {
		r.bad(name, v, "want a number of CPUs such as 1 or 0.5")
		return 0
	}
	f, _ := q.Float64()
	if q.Sign() == 0 {
		return 0
	}
	if f < 0.01 || f > 1024 || math.IsInf(f, 0) {
		r.bad(name, v, "want a number of CPUs from 0.01 to 1024, such as 1 or 0.5 (0: no limit)")
		return 0
	}
	return int64(math.Round(f * 1e9))
}

// backend reads MCP_BRIDGE_RUNTIME: "docker" or "podman" in any case,
// "auto" and "" to auto-detect, or, as the original (which ran the CLI
// found by that name) accepts, a binary's name or path: one whose base
// name holds "podman" is Podman, as the original decides, and one that
// holds "docker" is Docker. The binary itself is not run, so such a
// value is taken with a warning; any other is refused.
func (r *reader) backend(name string) string {
	v := r.get(name)
	switch low := strings.ToLower(v); low {
	case "", "auto":
		return ""
	case engine.BackendDocker, engine.BackendPodman, engine.BackendKubernetes:
		return low
	}
	base := strings.ToLower(filepath.Base(v))
	for _, b := range []string{engine.BackendPodman, engine.BackendDocker} {
		if strings.Contains(base, b) {
			r.warn(name, v, "taken as "+b+": the bridge talks to the engine's API service and does not run this binary")
			return b
		}
	}
	r.bad(name, v, `want "docker", "podman", "kubernetes", the path of the docker or podman binary, or unset (auto-detect)`)
	return ""
}

// outputMode reads the rendering of results' text: compact or toon in
// any case. The original renders every other value as toon; so does
// this bridge, with a warning.
func (r *reader) outputMode(name string) string {
	v := r.get(name)
	switch low := strings.ToLower(v); low {
	case "", mcpbridge.OutputCompact, mcpbridge.OutputTOON:
		return low
	}
	r.warn(name, v, "taken as toon, as the original takes any value other than compact (want compact or toon)")
	return mcpbridge.OutputTOON
}

// toolResults reads what a proxied tool call returns in the sandbox:
// simple or raw, in any case; "" when unset.
func (r *reader) toolResults(name string) string {
	switch v := strings.ToLower(r.get(name)); v {
	case "", mcpbridge.ToolResultsSimple, mcpbridge.ToolResultsRaw:
		return v
	default:
		r.bad(name, v, "want simple (the structured result, the text or the content list) or raw (the whole CallToolResult, as the original)")
		return ""
	}
}

// originalFlag reads a switch of the original's: 1, true or yes (and on)
// turn it on; 0, false, no, off turn it off. The original takes any other
// value as off; so does this bridge, with a warning.
func (r *reader) originalFlag(name string) bool {
	return r.onOff(name, func(v string) {
		r.warn(name, v, "taken as 0 (off), as the original takes any value other than 1, true or yes")
	})
}

// expandHome expands a leading "~" or "~user" of path as Python's
// Path.expanduser does (the original's reading of MCP_BRIDGE_STATE_DIR):
// "~" is $HOME, "~name" that user's home directory; a path whose user is
// unknown, or without $HOME, is left as it is.
func expandHome(path string) string {
	if !strings.HasPrefix(path, "~") {
		return path
	}
	name, rest, _ := strings.Cut(path[1:], string(filepath.Separator))
	var home string
	if name == "" {
		home, _ = os.UserHomeDir()
	} else if u, err := user.Lookup(name); err == nil {
		home = u.HomeDir
	}
	if home == "" {
		return path
	}
	return filepath.Join(home, rest)
}
