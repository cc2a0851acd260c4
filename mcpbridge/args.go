package mcpbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// A callArgs holds the validated arguments of one run_python call.
type callArgs struct {
	code    string
	servers []string
	timeout time.Duration
	session string // the handle of the sandbox to run in ("": none)
	fork    int    // copies of the sandbox to make after the code ran (0: none)
}

// parseArgs validates raw run_python arguments: a missing timeout is def,
// a given one is clamped to 1 s … max. known reports whether a server name
// is configured. The error text is shown to the model.
func parseArgs(raw json.RawMessage, def, max time.Duration, known func(string) bool) (callArgs, string) {
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		fields = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(raw, &fields); err != nil {
		return callArgs{}, "Arguments must be a JSON object"
	}
	a := callArgs{timeout: def}

	code, ok := fields["code"]
	if !ok || isNull(code) || json.Unmarshal(code, &a.code) != nil || strings.TrimSpace(a.code) == "" {
		if ok && !isNull(code) && code[0] != '"' {
			return callArgs{}, "'code' must be a string"
		}
		return callArgs{}, "Missing 'code' argument"
	}

	if s, ok := fields["servers"]; ok && !isNull(s) {
		var list []json.RawMessage
		if json.Unmarshal(s, &list) != nil {
			return callArgs{}, "'servers' must be a list"
		}
		seen := map[string]bool{}
		for _, item := range list {
			var name string
			if json.Unmarshal(item, &name) != nil || item[0] != '"' {
				return callArgs{}, "'servers' must be a list of strings"
			}
			name = strings.TrimSpace(name)
			if name == "" || seen[name] {
				continue
			}
			if !known(name) {
				return callArgs{}, fmt.Sprintf("Unknown MCP server: %q is not configured", name)
			}
			seen[name] = true
			a.servers = append(a.servers, name)
		}
	}

	if s, ok := fields["session"]; ok && !isNull(s) {
		if json.Unmarshal(s, &a.session) != nil || s[0] != '"' {
			return callArgs{}, "'session' must be a string: the session handle a run_python result gave"
		}
		a.session = strings.TrimSpace(a.session)
	}

	if f, ok := fields["fork"]; ok && !isNull(f) {
		var n int64
		if !isInteger(f) || json.Unmarshal(f, &n) != nil || n < 0 {
			return callArgs{}, "'fork' must be a whole number: how many copies of the sandbox to make after the code has run"
		}
		a.fork = int(min(n, 1<<20))
	}

	if t, ok := fields["timeout"]; ok && !isNull(t) {
		var n int64
		if !isInteger(t) || json.Unmarshal(t, &n) != nil {
			return callArgs{}, "'timeout' must be an integer"
		}
		a.timeout = clampTimeout(n, max)
	}
	return a, ""
}

// clampTimeout turns n seconds into a duration within 1 s and max.
func clampTimeout(n int64, max time.Duration) time.Duration {
	if n < 1 {
		n = 1
	}
	if limit := int64(max / time.Second); n > limit {
		n = limit
	}
	return time.Duration(n) * time.Second
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// isInteger reports whether raw is a JSON number without fraction or
// exponent (30, not 30.5 or "30").
func isInteger(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
