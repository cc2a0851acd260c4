package mcpbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of AuditOptions.
const (
	defaultAuditMaxBytes = 64 << 20
	defaultAuditKeep     = 5
)

// maxAuditArgs bounds the JSON of a tool call's arguments in a record;
// past it the record keeps a prefix and says how long they were.
const maxAuditArgs = 8 << 10

// auditWarnEvery spaces the warnings of failed audit writes.
const auditWarnEvery = time.Minute

// AuditOptions configure OpenAudit.
type AuditOptions struct {
	// MaxBytes is the size past which the file is rotated: renamed to
	// PATH.1 (PATH.1 to PATH.2, …) and started anew. Zero: 64 MiB.
	MaxBytes int64
	// Keep is how many rotated files are kept. Zero: 5.
	Keep int
	// Logger receives the warnings of failed writes. Zero: discarded.
	Logger *slog.Logger
}

// An AuditLog appends audit records to a file: one JSON object a line,
// each with an "event" field ("run_python", "tool_call"). A line is
// written with one write on a file opened for appending, so lines of
// concurrent writers never interleave. A write that fails (a full disk)
// never fails the call it records: it is counted and logged as a warning,
// at most once a minute.
type AuditLog struct {
	path string
	opts AuditOptions
	log  *slog.Logger

	mu       sync.Mutex
	f        *os.File
	size     int64
	regular  bool // only a regular file is rotated
	dropped  int64
	warnedAt time.Time
}

// OpenAudit opens (creating it, mode 0600) the audit log at path for
// appending. It fails, naming the path, when the file cannot be written:
// a directory, a read-only place, a missing directory.
func OpenAudit(path string, opts *AuditOptions) (*AuditLog, error) {
	a := &AuditLog{path: path}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.MaxBytes <= 0 {
		a.opts.MaxBytes = defaultAuditMaxBytes
	}
	if a.opts.Keep <= 0 {
		a.opts.Keep = defaultAuditKeep
	}
	a.log = a.opts.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if err := a.open(); err != nil {
		return nil, err
	}
	return a, nil
}

// open opens the file at a.path; a.mu is held or a is not shared yet.
func (a *AuditLog) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening audit log: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return fmt.Errorf("opening audit log: %s is a directory", a.path)
	}
	a.f, a.size, a.regular = f, fi.Size(), fi.Mode().IsRegular()
	return nil
}

// write appends rec as one line, rotating the file first when the line
// would take it past MaxBytes.
func (a *AuditLog) write(rec map[string]any) {
	if a == nil {
		return
	}
	rec["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	line, err := json.Marshal(rec)
	if err != nil {
		line, _ = json.Marshal(map[string]any{"time": rec["time"], "event": rec["event"], "error": "record not encodable: " + err.Error()})
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		a.failed(fmt.Errorf("the audit log is closed"))
		return
	}
	if a.regular && a.size > 0 && a.size+int64(len(line)) > a.opts.MaxBytes {
		if err := a.rotate(); err != nil {
			a.failed(err)
			if a.f == nil {
				return
			}
		}
	}
	n, err := a.f.Write(line)
	a.size += int64(n)
	if err != nil {
		a.failed(fmt.Errorf("writing audit log %s: %w", a.path, err))
	}
}

// rotate renames the file to PATH.1, shifting the older ones and dropping
// the oldest, and opens a new one; a.mu is held.
func (a *AuditLog) rotate() error {
	a.f.Close()
	a.f = nil
	os.Remove(a.path + "." + strconv.Itoa(a.opts.Keep))
	for i := a.opts.Keep - 1; i >= 1; i-- {
		os.Rename(a.path+"."+strconv.Itoa(i), a.path+"."+strconv.Itoa(i+1))
	}
	renameErr := os.Rename(a.path, a.path+".1")
	if err := a.open(); err != nil {
		return err
	}
	if renameErr != nil {
		return fmt.Errorf("rotating audit log: %w", renameErr)
	}
	return nil
}

// failed counts a record lost and warns, at most once a minute; a.mu is
// held.
func (a *AuditLog) failed(err error) {
	a.dropped++
	if time.Since(a.warnedAt) < auditWarnEvery {
		return
	}
	a.warnedAt = time.Now()
	a.log.Warn("audit records are being lost; calls go on", "path", a.path, "lost", a.dropped, "err", err)
}

// Close closes the file. Records written later are lost (and counted).
func (a *AuditLog) Close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// auditArguments renders a tool call's arguments for a record: the values
// of keys the policy redacts (at any depth) replaced, and the whole
// bounded to maxAuditArgs bytes of JSON.
func auditArguments(args map[string]any, p *policy) any {
	red := redact(args, p, 0)
	data, err := json.Marshal(red)
	if err != nil {
		return map[string]any{"unencodable": err.Error()}
	}
	if len(data) <= maxAuditArgs {
		return red
	}
	return map[string]any{"truncated": string(data[:maxAuditArgs]), "bytes": len(data)}
}

// redact returns v with the values of redacted keys replaced, to a depth
// of 32 (deeper values are replaced too: nothing unchecked is written).
func redact(v any, p *policy, depth int) any {
	if depth > 32 {
		return "[too deep]"
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if p.redacts(k) {
				out[k] = "[redacted]"
			} else {
				out[k] = redact(x, p, depth+1)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redact(x, p, depth+1)
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

// Outcomes of a proxied call in audit records, besides the confirmation
// outcomes (accepted, declined, allowed_without_elicitation).
const (
	outcomeOK     = "ok"
	outcomeError  = "error"
	outcomeDenied = "denied"
)

// auditRunPython writes the record of a run_python call.
func (b *Bridge) auditRunPython(req *mcp.CallToolRequest, cs *clientSession, args callArgs, began time.Time, status string, outBytes int) {
	if b.audit == nil {
		return
	}
	rec := map[string]any{
		"event":        "run_python",
		"code_sha256":  codeDigest(args.code),
		"code_bytes":   len(args.code),
		"servers":      nonNil(args.servers),
		"duration_ms":  time.Since(began).Milliseconds(),
		"status":       status,
		"output_bytes": outBytes,
	}
	addSession(rec, cs, req.Session)
	b.audit.write(rec)
}

// auditToolCall writes the record of a proxied call of tool of server.
func (b *Bridge) auditToolCall(cs *clientSession, p *policy, server, tool string, args map[string]any, began time.Time, outcome string, err error, extra ...any) {
	if b.audit == nil {
		return
	}
	rec := map[string]any{
		"event":       "tool_call",
		"server":      server,
		"tool":        tool,
		"arguments":   auditArguments(args, p),
		"duration_ms": time.Since(began).Milliseconds(),
		"outcome":     outcome,
	}
	if err != nil {
		rec["error"] = err.Error()
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if k, ok := extra[i].(string); ok {
			rec[k] = extra[i+1]
		}
	}
	var ss *mcp.ServerSession
	if ci := cs.current.Load(); ci != nil {
		ss = ci.ss
	}
	addSession(rec, cs, ss)
	b.audit.write(rec)
}

// addSession adds the client session's names to rec.
func addSession(rec map[string]any, cs *clientSession, ss *mcp.ServerSession) {
	if cs != nil {
		rec["session"] = cs.name
	}
	if ss != nil && ss.ID() != "" {
		rec["mcp_session"] = ss.ID()
	}
}

// nonNil returns s, or an empty list for nil, so that JSON shows [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
