package mcpbridge

import (
	"context"
	"fmt"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// A consoleReplica is the bridge as its console sees it
// (console.Replica): what a console.Monitor asks the bridge for.
type consoleReplica struct {
	b      *Bridge
	health *healthCheck
}

// newConsole returns the console of token (clientToken, the clients'
// token, does not open it) and starts following calls, questions and
// audit records for it; the caller serves it behind the Host and Origin
// checks.
func (b *Bridge) newConsole(token, clientToken string, secureCookie bool, health *healthCheck) (*console.Console, error) {
	log := b.log.With("component", "console")
	var mem console.MemoryReader // nil: the engine cannot say
	if engine.MayBe[engine.MemoryReader](b.eng) {
		mem = engineMemory{b.eng}
	}
	m := console.NewMonitor(consoleReplica{b: b, health: health}, console.MonitorOptions{
		Replica: b.opts.Replica, Version: b.opts.Version, Audit: b.audit != nil,
		Memory: mem, Done: b.closing, Logger: b.log})
	if b.audit != nil {
		b.audit.Tee(m.AddAudit)
	}
	c, err := console.New(m, console.Options{Token: token, ClientToken: clientToken, SecureCookie: secureCookie,
		Done: b.closing, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("serving the console: %w", err)
	}
	b.live.CompareAndSwap(nil, m.Calls())
	b.approvals.CompareAndSwap(nil, m.Questions())
	return c, nil
}

// Health returns the engine's name and why it does not answer
// (console.Replica).
func (r consoleReplica) Health(ctx context.Context) (string, error) {
	err := r.health.engineHealth(ctx)
	return r.health.engineName(), err
}

// Pool returns the warm pool's state (console.Replica).
func (r consoleReplica) Pool() console.Pool {
	p := console.Pool{Ready: r.b.pool.readyCount()}
	p.Sleeping, p.SleepingBytes = r.b.sleepers.read()
	if r.b.pool != nil {
		p.Size = r.b.pool.size
	}
	return p
}

// Sandboxes returns the client sessions and the sandboxes behind handles
// (console.Replica).
func (r consoleReplica) Sandboxes() []console.Sandbox {
	b := r.b
	var out []console.Sandbox
	add := func(cs *clientSession, label string) {
		id, eng := cs.session.Sandbox()
		out = append(out, console.Sandbox{Name: cs.name, Label: label, Engine: eng, ID: id,
			Born: cs.born, Busy: cs.current.Load() != nil})
	}
	b.mu.Lock()
	var sessions []*clientSession
	var labels []string
	for ss, cs := range b.sessions {
		sessions = append(sessions, cs)
		labels = append(labels, console.ShortSessionID(mcpSessionID(ss)))
	}
	b.mu.Unlock()
	for i, cs := range sessions {
		add(cs, labels[i])
	}
	// Sandboxes behind handles (protocol 2026-07-28), minted here or
	// resumed from another replica: named by their handle, redacted.
	for _, cs := range b.handles.table.list() {
		what := "handle " + handle.Redact(cs.handle)
		if cs.resumed {
			what += " (resumed)"
		}
		add(cs, what)
	}
	return out
}

// Engines returns each engine's state when there are several
// (console.Replica).
func (r consoleReplica) Engines() ([]console.EngineState, bool) {
	st, ok := r.b.eng.(engineStates)
	if !ok {
		return nil, false
	}
	var out []console.EngineState
	for _, e := range st.Engines() {
		out = append(out, console.EngineState{Name: e.Name, Up: e.Up, Sandboxes: e.Sandboxes, Error: e.Error})
	}
	return out, true
}

// An engineMemory reads a sandbox's memory through the bridge's engine,
// whichever of its engines (engine.SandboxMemory) the sandbox is on.
type engineMemory struct{ eng engine.Engine }

// SandboxMemory implements console.MemoryReader.
func (m engineMemory) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	return engine.SandboxMemory(ctx, m.eng, engineName, ref)
}
