package mcpbridge

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// consoleAuditRecords is how many recent audit records the console keeps.
const consoleAuditRecords = 200

// A consoleSource is the bridge as its console sees it (console.Source).
type consoleSource struct {
	b      *Bridge
	health *healthCheck
	host   string
	audit  *console.Ring // nil: no audit log
	memory *memorySampler
	*changeSignal
}

// newConsole returns the console of token (clientToken, the clients'
// token, does not open it) and starts following calls and audit records
// for it; the caller serves it behind the Host and Origin checks.
func (b *Bridge) newConsole(token, clientToken string, secureCookie bool, health *healthCheck) (*console.Console, error) {
	changed := &changeSignal{}
	src := &consoleSource{b: b, health: health, memory: newMemorySampler(b.eng, b.closing, changed, b.log), changeSignal: changed}
	src.host, _ = os.Hostname()
	if b.audit != nil {
		src.audit = console.NewRing(consoleAuditRecords)
		b.audit.Tee(func(line []byte) {
			src.audit.Add(line)
			changed.notify()
		})
	}
	c, err := console.New(src, console.Options{Token: token, ClientToken: clientToken, SecureCookie: secureCookie,
		Done: b.closing, Logger: b.log.With("component", "console")})
	if err != nil {
		return nil, fmt.Errorf("serving the console: %w", err)
	}
	b.live.CompareAndSwap(nil, newLiveCalls(src.changeSignal))
	b.approvals.CompareAndSwap(nil, newApprovals(src.changeSignal))
	return c, nil
}

// Snapshot returns the replica's state for the console.
func (s *consoleSource) Snapshot(ctx context.Context) console.Snapshot {
	b := s.b
	snap := console.Snapshot{Replica: b.opts.Replica, Host: s.host, Version: b.opts.Version, Status: "ok",
		Engines: []console.EngineState{}, Sessions: []console.Session{}, Audit: []console.Record{}, Questions: []console.Question{}}
	if err := s.health.engineHealth(ctx); err != nil {
		snap.Status, snap.Error = "unavailable", err.Error()
	}
	snap.Engine = s.health.engineName()
	snap.Pool.Ready = b.pool.readyCount()
	if b.pool != nil {
		snap.Pool.Size = b.pool.size
	}
	b.mu.Lock()
	type entry struct {
		cs  *clientSession
		mcp string
	}
	var live []entry
	for ss, cs := range b.sessions {
		live = append(live, entry{cs, console.ShortSessionID(mcpSessionID(ss))})
	}
	b.mu.Unlock()
	// Sandboxes behind handles (protocol 2026-07-28), minted here or
	// resumed from another replica: named by their handle, redacted.
	for _, cs := range b.handles.list() {
		what := "handle " + handle.Redact(cs.handle)
		if cs.resumed {
			what += " (resumed)"
		}
		live = append(live, entry{cs, what})
	}
	keep := map[string]bool{}
	for _, e := range live {
		keep[e.cs.name] = true
	}
	calls, counts := b.live.Load().snapshot(keep)
	snap.Calls = calls
	refs := make([]sandboxRef, len(live))
	for i, e := range live {
		id, eng := e.cs.session.Sandbox()
		refs[i] = sandboxRef{engine: eng, id: id}
	}
	memory := s.memory.figures(refs)
	for i, e := range live {
		eng := refs[i].engine
		if eng == "" {
			eng = snap.Engine // one engine: sandboxes do not name it
		}
		snap.Sessions = append(snap.Sessions, console.Session{
			Name: e.cs.name, MCPSession: e.mcp, Engine: eng, Container: prefix(refs[i].id, 12),
			Age: time.Since(e.cs.born).Seconds(), Calls: counts[e.cs.name], Busy: e.cs.current.Load() != nil,
			Memory: memory[refs[i]],
		})
	}
	slices.SortFunc(snap.Sessions, func(a, b console.Session) int { return cmp.Compare(b.Age, a.Age) }) // the oldest first
	if st, ok := b.eng.(engineStates); ok {
		for _, e := range st.Engines() {
			snap.Engines = append(snap.Engines, console.EngineState{Name: e.Name, Up: e.Up, Sandboxes: e.Sandboxes, Error: e.Error})
		}
	} else {
		// One engine: its state is the bridge's, its sandboxes the
		// sessions' and the pool's.
		up := snap.Error == ""
		snap.Engines = append(snap.Engines, console.EngineState{Name: snap.Engine, Up: up, Sandboxes: len(snap.Sessions) + snap.Pool.Ready, Error: snap.Error})
	}
	if s.audit != nil {
		snap.AuditOn = true
		snap.Audit = s.audit.Records()
	}
	snap.Questions = b.approvals.Load().list()
	return snap
}

// prefix returns the first n bytes of s (an ID).
func prefix(s string, n int) string {
	return s[:min(len(s), n)]
}

// Arguments returns the writer of a question's whole arguments
// (console.Source).
func (s *consoleSource) Arguments(id string) (func(io.Writer) error, error) {
	return s.b.approvals.Load().arguments(id)
}

// Answer answers a question from the console (console.Source).
func (s *consoleSource) Answer(id string, approve bool, operator string) error {
	ap := s.b.approvals.Load()
	if ap == nil {
		return errNoQuestion
	}
	return ap.answer(id, approve, operator)
}
