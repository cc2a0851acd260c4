package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"strconv"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/jsontext"
)

// maxArgs bounds the JSON of a tool call's arguments in a record; past it
// the record keeps a prefix and says how long they were.
const maxArgs = 8 << 10

// A RunPython is the record of one run_python call ("event":
// "run_python"). The code itself is never written: its SHA-256 and length
// are.
type RunPython struct {
	Code        string
	Servers     []string  // the servers the call named
	Began       time.Time // when the call began, for its duration
	Status      string
	OutputBytes int
	Session     string // the bridge's client session; "": none
	MCPSession  string // the MCP session ID; "": none
	// Issuer and Subject name the person calling (OAuth); "": none.
	Issuer, Subject string
}

// RunPython writes the record of a run_python call; a nil *Log writes
// nothing.
func (a *Log) RunPython(r RunPython) {
	if a == nil {
		return
	}
	rec := map[string]any{
		"event":        "run_python",
		"code_sha256":  codeDigest(r.Code),
		"code_bytes":   len(r.Code),
		"servers":      nonNil(r.Servers),
		"duration_ms":  time.Since(r.Began).Milliseconds(),
		"status":       r.Status,
		"output_bytes": r.OutputBytes,
	}
	addSession(rec, r.Session, r.MCPSession)
	addPerson(rec, r.Issuer, r.Subject)
	a.write(rec)
}

// A ToolCall is the record of one proxied tool call ("event":
// "tool_call"). Its arguments are written redacted (as Redact does) and
// bounded to 8 KiB of JSON.
type ToolCall struct {
	Server, Tool string
	Arguments    map[string]any
	// Redacts says which argument keys have their values hidden (the
	// tool policy's); nil hides none.
	Redacts func(key string) bool
	Began   time.Time // when the call began, for its duration
	Outcome string    // ok, error, denied, or a confirmation's outcome
	Err     error     // nil: no "error" field
	// Extra holds more fields, as key, value pairs: "rule", the policy's.
	Extra      []any
	Session    string // the bridge's client session; "": none
	MCPSession string // the MCP session ID; "": none
	// Issuer and Subject name the person calling (OAuth); "": none.
	Issuer, Subject string
}

// ToolCall writes the record of a proxied tool call; a nil *Log writes
// nothing.
func (a *Log) ToolCall(r ToolCall) {
	if a == nil {
		return
	}
	rec := map[string]any{
		"event":       "tool_call",
		"server":      r.Server,
		"tool":        r.Tool,
		"arguments":   arguments(r.Arguments, r.Redacts),
		"duration_ms": time.Since(r.Began).Milliseconds(),
		"outcome":     r.Outcome,
	}
	if r.Err != nil {
		rec["error"] = r.Err.Error()
	}
	for i := 0; i+1 < len(r.Extra); i += 2 {
		if k, ok := r.Extra[i].(string); ok {
			rec[k] = r.Extra[i+1]
		}
	}
	addSession(rec, r.Session, r.MCPSession)
	addPerson(rec, r.Issuer, r.Subject)
	if r.Outcome == OutcomeDenied {
		reason := ""
		if r.Err != nil {
			reason = r.Err.Error()
		}
		a.refused(mergeKey{event: "tool_call", session: r.Session + " " + r.MCPSession, target: r.Server + "." + r.Tool, reason: reason}, rec)
		return
	}
	a.write(rec)
}

// OutcomeDenied is the outcome of a refusal, in tool call and egress
// records: such records are merged (merge.go).
const OutcomeDenied = "denied"

// addSession adds the client session's names to rec.
// addPerson adds the person calling (issuer and subject) to rec, when
// there is one.
func addPerson(rec map[string]any, issuer, subject string) {
	if subject != "" {
		rec["issuer"], rec["subject"] = issuer, subject
	}
}

func addSession(rec map[string]any, session, mcpSession string) {
	if session != "" {
		rec["session"] = session
	}
	if mcpSession != "" {
		rec["mcp_session"] = mcpSession
	}
}

// arguments renders a tool call's arguments for a record: the values of
// keys redacts reports (at any depth) replaced, and the whole bounded to
// 8 KiB of JSON. Large arguments are neither copied nor encoded whole:
// their length is counted and their first 8 KiB kept (jsontext).
func arguments(args map[string]any, redacts func(key string) bool) any {
	t := jsontext.Capped(maxArgs)
	t.Value(args, "", redacts)
	if t.Len() <= maxArgs {
		return Redact(args, redacts)
	}
	return map[string]any{"truncated": t.Kept(), "bytes": t.Len()}
}

// Redact returns v with the values of the keys redacts reports (nil:
// none) replaced by "[redacted]", in maps at any depth up to 32 (deeper
// values are replaced too: nothing unchecked is written).
func Redact(v any, redacts func(key string) bool) any {
	return redact(v, redacts, 0)
}

// redact is Redact at depth.
func redact(v any, redacts func(key string) bool, depth int) any {
	if depth > 32 {
		return "[too deep]"
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if redacts != nil && redacts(k) {
				out[k] = "[redacted]"
			} else {
				out[k] = redact(x, redacts, depth+1)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redact(x, redacts, depth+1)
		}
		return out
	}
	return v
}

// codeDigest returns the hex SHA-256 of code.
func codeDigest(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// nonNil returns s, or an empty list for nil, so that JSON shows [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// An Egress is the record of one connection sandbox code made through the
// egress gateway ("event": "egress"), or of one request the gateway read
// in it. It never holds a header's value. A refusal (Outcome "denied")
// is merged with the session's refusals of the same host, port and
// reason (merge.go): the record has a "count".
type Egress struct {
	Host     string // as the code named it
	Port     int
	Address  string // the address dialled; "": none
	Method   string // of the request, where the gateway saw it; "": unseen
	Path     string // of the request, without its query; "": unseen
	Sent     int64  // bytes from the sandbox to the host
	Received int64  // bytes from the host to the sandbox
	Began    time.Time
	Outcome  string // allowed, denied or error
	Rule     string // the policy entry that decided; "": none
	Reason   string // why a connection was denied or failed; "": none
	Session  string // the bridge's client session; "": none
	// Masked counts the occurrences of an injected secret the gateway
	// masked in the answer (its head and body) before the sandbox saw it.
	Masked int64
}

// Egress writes the record of a connection through the egress gateway; a
// nil *Log writes nothing.
func (a *Log) Egress(r Egress) {
	if a == nil {
		return
	}
	rec := map[string]any{
		"event":       "egress",
		"host":        r.Host,
		"port":        r.Port,
		"bytes_out":   r.Sent,
		"bytes_in":    r.Received,
		"duration_ms": time.Since(r.Began).Milliseconds(),
		"outcome":     r.Outcome,
	}
	for k, v := range map[string]string{"address": r.Address, "method": r.Method, "path": r.Path, "rule": r.Rule, "reason": r.Reason} {
		if v != "" {
			rec[k] = v
		}
	}
	if r.Masked > 0 {
		rec["masked"] = r.Masked
	}
	addSession(rec, r.Session, "")
	if r.Outcome == OutcomeDenied {
		a.refused(mergeKey{event: "egress", session: r.Session, target: net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), reason: r.Reason}, rec)
		return
	}
	a.write(rec)
}
