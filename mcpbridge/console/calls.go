package console

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/jsontext"
)

// Bounds of what the console keeps of a call in flight.
const (
	outputLines = 20  // its last output lines
	lineBytes   = 200 // of each line
	codeBytes   = 120 // of its code's first line
)

// A Calls follows the run_python calls in flight, with their last
// output lines, and counts each session's calls, for the console. A nil
// *Calls follows nothing (no console).
type Calls struct {
	changed *changeSignal

	mu     sync.Mutex
	seq    int64
	calls  map[int64]*liveCall
	counts map[string]int64 // calls made, by session name
}

// A liveCall is a call in flight.
type liveCall struct {
	id      int64
	session string
	began   time.Time
	code    string
	lines   []string // its last complete output lines, a window
	partial string   // its output's unfinished line
}

func newCalls(changed *changeSignal) *Calls {
	return &Calls{changed: changed, calls: map[int64]*liveCall{}, counts: map[string]int64{}}
}

// Begin follows a call of session running code, and returns the output
// callback to give the call in place of next (which it calls on) and the
// function that ends following it.
func (l *Calls) Begin(session, code string, next func(stream, data string)) (onOutput func(stream, data string), end func()) {
	if l == nil {
		return next, func() {}
	}
	first, _, _ := strings.Cut(strings.TrimLeft(code, "\n"), "\n")
	l.mu.Lock()
	l.seq++
	c := &liveCall{id: l.seq, session: session, began: time.Now(), code: jsontext.EscapeCf(cut(first, codeBytes))}
	l.calls[c.id] = c
	l.counts[session]++
	l.mu.Unlock()
	l.changed.notify()
	onOutput = func(stream, data string) {
		l.mu.Lock()
		c.add(data)
		l.mu.Unlock()
		l.changed.notify()
		if next != nil {
			next(stream, data)
		}
	}
	end = func() {
		l.mu.Lock()
		delete(l.calls, c.id)
		l.mu.Unlock()
		l.changed.notify()
	}
	return onOutput, end
}

// add takes a piece of output; the caller holds the Calls' lock.
func (c *liveCall) add(data string) {
	text := c.partial + data
	parts := strings.Split(text, "\n")
	c.partial = cut(parts[len(parts)-1], lineBytes)
	parts = parts[:len(parts)-1]
	if len(parts) > outputLines {
		parts = parts[len(parts)-outputLines:]
	}
	for _, p := range parts {
		c.lines = append(c.lines, jsontext.EscapeCf(cut(strings.TrimSuffix(p, "\r"), lineBytes)))
	}
	if n := len(c.lines); n > outputLines {
		c.lines = append(c.lines[:0], c.lines[n-outputLines:]...)
	}
}

// snapshot returns the calls in flight, oldest first, and each session's
// count of calls, forgetting the sessions not in keep.
func (l *Calls) snapshot(keep map[string]bool) ([]Call, map[string]int64) {
	calls := []Call{}
	counts := map[string]int64{}
	if l == nil {
		return calls, counts
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, n := range l.counts {
		if !keep[name] {
			delete(l.counts, name)
			continue
		}
		counts[name] = n
	}
	for _, c := range l.calls {
		out := append([]string{}, c.lines...)
		if c.partial != "" {
			out = append(out, jsontext.EscapeCf(c.partial))
		}
		if len(out) > outputLines {
			out = out[len(out)-outputLines:]
		}
		calls = append(calls, Call{ID: c.id, Session: c.session, Elapsed: time.Since(c.began).Seconds(), Code: c.code, Output: out})
	}
	slices.SortFunc(calls, func(a, b Call) int { return cmp.Compare(a.ID, b.ID) })
	return calls, counts
}
