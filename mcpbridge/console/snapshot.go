package console

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"
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

// serveState answers the snapshot as JSON, for scripts.
func (c *Console) serveState(w http.ResponseWriter, r *http.Request, _ operator) {
	body, _ := json.Marshal(c.src.Snapshot(r.Context()))
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
}

// refreshEvery is how many intervals a stream lets pass without an
// event when only ages and durations changed.
const refreshEvery = 5

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

// serveEvents streams the snapshot as server-sent events: an event
// "snapshot" (its JSON) at once and at each change (ages and durations
// alone are pushed every refreshEvery intervals), a comment now and then
// to keep proxies from closing the stream, and "signedout" when the
// session ends. A browser's EventSource sends the cookie.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request, who operator) {
	select {
	case c.streams <- struct{}{}:
		defer func() { <-c.streams }()
	default:
		w.Header().Set("Retry-After", "10")
		c.refuse(w, r, http.StatusServiceUnavailable, "too many console streams open")
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.StreamAge)
	defer cancel()
	tick := time.NewTicker(c.opts.Interval)
	defer tick.Stop()
	var last []byte
	quiet := 0
	notifier, _ := c.src.(Notifier)
	var sent time.Time // when the last snapshot event went out
	ticked := true     // the first look counts as an interval
	for {
		if who.session != nil && c.auth.get(who.id) == nil {
			w.Write([]byte("event: signedout\ndata: {}\n\n"))
			rc.Flush()
			return
		}
		var changed <-chan struct{} // nil: only the ticker wakes the stream
		if notifier != nil {
			changed = notifier.Changed() // before the look: no change is missed
		}
		snap := c.src.Snapshot(ctx)
		key, _ := json.Marshal(snap.stable())
		var err error
		if ticked {
			quiet++
		}
		switch {
		case string(key) != string(last) || quiet >= refreshEvery && snap.changing():
			body, _ := json.Marshal(snap)
			_, err = w.Write([]byte("event: snapshot\ndata: " + string(body) + "\n\n"))
			last, quiet, sent = key, 0, time.Now()
		case quiet >= 15:
			_, err = w.Write([]byte(": still here\n\n"))
			quiet = 0
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Done:
			return
		case <-tick.C:
			ticked = true
		case <-changed:
			// At once, unless an event went out within PushGap: then
			// when the gap ends, so that a burst of changes (a call's
			// output) makes one event and a stream at most one per gap.
			ticked = false
			select {
			case <-ctx.Done():
				return
			case <-c.opts.Done:
				return
			case <-time.After(time.Until(sent.Add(c.opts.PushGap))):
			}
		}
	}
}

// serveArguments answers GET argsPath?question=ID with the question's
// whole arguments as JSON text (secrets redacted, format characters
// escaped), streamed as the call holds them: the console shows them
// whole, where a question shows each value cut to its share.
func (c *Console) serveArguments(w http.ResponseWriter, r *http.Request, _ operator) {
	write, err := c.src.Arguments(r.URL.Query().Get("question"))
	if err != nil {
		c.refuse(w, r, http.StatusNotFound, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", "inline")
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := write(bw); err == nil {
		bw.Flush()
	}
}

// serveAnswer answers a question (a form: question, and answer
// "approve" or "decline"). A signed-in operator is sent back to the
// console; a bearer gets 200.
func (c *Console) serveAnswer(w http.ResponseWriter, r *http.Request, who operator) {
	id, answer := r.PostFormValue("question"), r.PostFormValue("answer")
	if answer != "approve" && answer != "decline" {
		c.refuse(w, r, http.StatusBadRequest, `want answer "approve" or "decline"`)
		return
	}
	if err := c.src.Answer(id, answer == "approve", who.name); err != nil {
		c.refuse(w, r, http.StatusNotFound, err.Error())
		return
	}
	c.opts.Logger.Info("console answer", "question", id, "answer", answer, "operator", who.name)
	if who.session != nil {
		http.Redirect(w, r, Path, http.StatusSeeOther)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(answer + "d\n"))
}
