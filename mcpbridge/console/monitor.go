package console

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"
)

// auditRecords is how many recent audit records a Monitor keeps.
const auditRecords = 200

// A Replica is a bridge as its console sees it: the bridge implements
// it, and a Monitor asks it for what only the bridge knows.
type Replica interface {
	// Health returns the name of the engine and, when it does not
	// answer, why (the answer of /healthz). The name is asked after the
	// check, which may connect the engine.
	Health(ctx context.Context) (engine string, err error)
	// Pool returns the warm pool's state.
	Pool() Pool
	// Sandboxes returns the live client sessions and the sandboxes
	// behind handles.
	Sandboxes() []Sandbox
	// Engines returns the state of each engine when there are several;
	// ok is false for one engine, whose state is the replica's.
	Engines() (states []EngineState, ok bool)
}

// A Sandbox is a live client session or a sandbox behind a handle, as
// its Replica knows it.
type Sandbox struct {
	// Name is the session's name, as Calls.Begin was given it.
	Name string
	// Label says what it is: the start of its Mcp-Session-Id
	// (ShortSessionID), or its handle (redacted).
	Label string
	// Engine names the engine its sandbox runs on ("" for a replica
	// with one) and ID is its container; both "" while it has none.
	Engine, ID string
	Born       time.Time
	Busy       bool // a call runs in it
}

// MonitorOptions configure a Monitor; each zero value is a default.
type MonitorOptions struct {
	// Replica is MCP_BRIDGE_HTTP_REPLICA and Version the build's, as
	// Snapshot shows them. Zero: unnamed, no version.
	Replica, Version string
	// Audit says audit records are written: the Monitor keeps the
	// recent ones it is given (AddAudit). Zero: none.
	Audit bool
	// Memory reads the sandboxes' memory. Zero: an engine that cannot.
	Memory MemoryReader
	// Done, when closed, ends a pass of memory reads in flight (the
	// bridge closing). Zero: never.
	Done <-chan struct{}
	// Logger receives the failed memory reads. Zero: discarded.
	Logger *slog.Logger
}

// A Monitor is the Source of a replica's console: it follows the calls
// in flight (Calls) and the questions waiting (Questions), keeps the
// recent audit records, reads the sandboxes' memory in the background,
// and asks its Replica for the rest. It is a Notifier.
type Monitor struct {
	replica   Replica
	name      string // the replica's (MonitorOptions.Replica)
	host      string
	version   string
	changed   *changeSignal
	calls     *Calls
	questions *Questions
	audit     *Ring // nil: no audit records
	memory    *memorySampler
}

// NewMonitor returns the monitor of r under opts.
func NewMonitor(r Replica, opts MonitorOptions) *Monitor {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	changed := &changeSignal{}
	m := &Monitor{replica: r, name: opts.Replica, version: opts.Version, changed: changed,
		calls: newCalls(changed), questions: newQuestions(changed),
		memory: newMemorySampler(opts.Memory, opts.Done, changed, opts.Logger)}
	m.host, _ = os.Hostname()
	if opts.Audit {
		m.audit = NewRing(auditRecords)
	}
	return m
}

// Calls returns the calls the monitor follows.
func (m *Monitor) Calls() *Calls { return m.calls }

// Questions returns the questions the monitor shows.
func (m *Monitor) Questions() *Questions { return m.questions }

// AddAudit keeps an audit record (a line of the audit log), when the
// monitor keeps them.
func (m *Monitor) AddAudit(line []byte) {
	if m.audit == nil {
		return
	}
	m.audit.Add(line)
	m.changed.notify()
}

// Changed returns a channel closed at the next change (Notifier).
func (m *Monitor) Changed() <-chan struct{} { return m.changed.Changed() }

// Snapshot returns the replica's state (Source).
func (m *Monitor) Snapshot(ctx context.Context) Snapshot {
	snap := Snapshot{Replica: m.name, Host: m.host, Version: m.version, Status: "ok",
		Engines: []EngineState{}, Sessions: []Session{}, Audit: []Record{}, Questions: []Question{}}
	eng, err := m.replica.Health(ctx)
	if err != nil {
		snap.Status, snap.Error = "unavailable", err.Error()
	}
	snap.Engine = eng
	snap.Pool = m.replica.Pool()
	live := m.replica.Sandboxes()
	keep := map[string]bool{}
	for _, s := range live {
		keep[s.Name] = true
	}
	calls, counts := m.calls.snapshot(keep)
	snap.Calls = calls
	refs := make([]sandboxRef, len(live))
	for i, s := range live {
		refs[i] = sandboxRef{engine: s.Engine, id: s.ID}
	}
	memory := m.memory.figures(refs)
	for i, s := range live {
		eng := refs[i].engine
		if eng == "" {
			eng = snap.Engine // one engine: sandboxes do not name it
		}
		snap.Sessions = append(snap.Sessions, Session{
			Name: s.Name, MCPSession: s.Label, Engine: eng, Container: prefix(refs[i].id, 12),
			Age: time.Since(s.Born).Seconds(), Calls: counts[s.Name], Busy: s.Busy,
			Memory: memory[refs[i]],
		})
	}
	slices.SortFunc(snap.Sessions, func(a, b Session) int { return cmp.Compare(b.Age, a.Age) }) // the oldest first
	if states, ok := m.replica.Engines(); ok {
		snap.Engines = append(snap.Engines, states...)
	} else {
		// One engine: its state is the replica's, its sandboxes the
		// sessions' and the pool's.
		up := snap.Error == ""
		snap.Engines = append(snap.Engines, EngineState{Name: snap.Engine, Up: up, Sandboxes: len(snap.Sessions) + snap.Pool.Ready, Error: snap.Error})
	}
	if m.audit != nil {
		snap.AuditOn = true
		snap.Audit = m.audit.Records()
	}
	snap.Questions = m.questions.List()
	return snap
}

// prefix returns the first n bytes of s (an ID).
func prefix(s string, n int) string {
	return s[:min(len(s), n)]
}

// Arguments returns the writer of a question's whole arguments (Source).
func (m *Monitor) Arguments(id string) (func(io.Writer) error, error) {
	return m.questions.arguments(id)
}

// Answer answers a question from the console (Source).
func (m *Monitor) Answer(id string, approve bool, operator string) error {
	return m.questions.answer(id, approve, operator)
}
