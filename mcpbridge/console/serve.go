package console

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// pageData is what the console's page is rendered from.
type pageData struct {
	Snapshot
	Operator string
	CSRF     string // "": a bearer client, no forms
}

// servePage renders the console.
func (c *Console) servePage(w http.ResponseWriter, r *http.Request, who operator) {
	d := pageData{Snapshot: c.src.Snapshot(r.Context()), Operator: who.name}
	if who.session != nil {
		d.CSRF = who.session.csrf
	}
	c.render(w, "console.html", d)
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
