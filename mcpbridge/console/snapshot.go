package console

import (
	"slices"
)

// A Snapshot is the state of one replica the console shows.
type Snapshot struct {
	// Replica is MCP_BRIDGE_HTTP_REPLICA ("": unnamed) and Host the
	// machine's name: the console shows this replica only.
	Replica string `json:"replica"`
	Host    string `json:"host"`
	Version string `json:"version"`
	// Status is "ok" or "unavailable" (the engine does not answer, Error
	// says why), as /healthz reports it.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Engine string `json:"engine"`
	// Engines is the state of each engine, when there are several.
	Engines  []EngineState `json:"engines"`
	Pool     Pool          `json:"pool"`
	Sessions []Session     `json:"sessions"`
	Calls    []Call        `json:"calls"`
	// Audit holds the recent audit records, the newest first; AuditOn
	// says whether audit records are written at all (MCP_BRIDGE_AUDIT_LOG).
	Audit   []Record `json:"audit"`
	AuditOn bool     `json:"audit_on"`
	// Questions are the calls waiting for an operator's answer.
	Questions []Question `json:"questions"`
}

// An EngineState is one engine's state among several.
type EngineState struct {
	Name      string `json:"name"`
	Up        bool   `json:"up"`
	Sandboxes int    `json:"sandboxes"`
	Error     string `json:"error,omitempty"`
}

// A Pool is the warm pool: sandboxes ready of its size.
type Pool struct {
	Ready int `json:"ready"`
	Size  int `json:"size"`
	// Sleeping and SleepingBytes are the sandboxes asleep on the engine
	// (MCP_BRIDGE_SNAPSHOTS) and the disk their checkpoints hold.
	Sleeping      int   `json:"sleeping"`
	SleepingBytes int64 `json:"sleeping_bytes"`
}

// A Session is a live client session and its sandbox.
type Session struct {
	Name string `json:"name"`
	// MCPSession is the start of its Mcp-Session-Id (a credential of
	// sorts, so cut short).
	MCPSession string `json:"mcp_session,omitempty"`
	// Engine and Container say where its sandbox runs (Container cut to
	// 12 characters); both "" while it has none.
	Engine    string  `json:"engine,omitempty"`
	Container string  `json:"container,omitempty"`
	Age       float64 `json:"age_seconds"`
	Calls     int64   `json:"calls"`
	Busy      bool    `json:"busy"`
	// Memory is what its sandbox uses, in bytes, as the engine last said
	// (read every few seconds while a console is open, not per push).
	// Zero: not known (not read yet, or an engine that cannot say).
	Memory int64 `json:"memory_bytes,omitempty"`
}

// A Call is a run_python call in flight.
type Call struct {
	ID      int64   `json:"id"`
	Session string  `json:"session"`
	Elapsed float64 `json:"elapsed_seconds"`
	// Code is the first line of its code, cut short.
	Code string `json:"code"`
	// Output is its last output lines, each cut short.
	Output []string `json:"output"`
}

// A Question is a proxied call waiting for an operator's answer.
type Question struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Message string `json:"message"`
	// Arguments lists every top-level argument, each value's JSON
	// (secrets redacted, format characters escaped) cut to its share with
	// its whole length stated; the whole is served at
	// /console/arguments?question=ID.
	Arguments string `json:"arguments"`
	// ArgumentsBytes is the length of the whole arguments' JSON.
	ArgumentsBytes int64 `json:"arguments_bytes"`
	// Line is the line of code the sandbox says the call comes from (its
	// claim, shown as such, never trusted); 0: none said.
	Line    int     `json:"line,omitempty"`
	Waiting float64 `json:"waiting_seconds"`
}

// stable returns s without its ages and durations, which change every
// second: what a change to push is judged on.
func (s Snapshot) stable() Snapshot {
	s.Sessions = slices.Clone(s.Sessions)
	for i := range s.Sessions {
		s.Sessions[i].Age = 0
	}
	s.Calls = slices.Clone(s.Calls)
	for i := range s.Calls {
		s.Calls[i].Elapsed = 0
	}
	s.Questions = slices.Clone(s.Questions)
	for i := range s.Questions {
		s.Questions[i].Waiting = 0
	}
	return s
}

// changing reports whether s shows ages or durations, which a page
// shows going up.
func (s Snapshot) changing() bool {
	return len(s.Sessions)+len(s.Calls)+len(s.Questions) > 0
}
