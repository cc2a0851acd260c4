package live

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Pending is a run_python call of a client asked through
// input-required results (protocol 2026-07-28). It runs on its own, so
// that it can wait, its code paused in a proxied call, while its handler
// answers the client with a question and the client calls again with the
// answer.
type Pending struct {
	done   chan *mcp.CallToolResult // its result, once (buffered)
	asks   chan *Question           // questions for the client
	cancel context.CancelFunc       // interrupts the call
	seq    int                      // numbers its questions (under asks' send)
}

// NewPending returns a pending call that cancel interrupts.
func NewPending(cancel context.CancelFunc) *Pending {
	return &Pending{done: make(chan *mcp.CallToolResult, 1), asks: make(chan *Question), cancel: cancel}
}

// End hands the call's result to whoever waits for it; call it once.
func (pc *Pending) End(res *mcp.CallToolResult) { pc.done <- res }

// Done returns the channel of the call's result.
func (pc *Pending) Done() <-chan *mcp.CallToolResult { return pc.done }

// Asks returns the channel of the call's questions for the client.
func (pc *Pending) Asks() <-chan *Question { return pc.asks }

// Cancel interrupts the call.
func (pc *Pending) Cancel() { pc.cancel() }

// Number gives q, the call's next question, its ID: confirm-1,
// confirm-2, and so on. Only the one that received q from Asks calls it.
func (pc *Pending) Number(q *Question) {
	pc.seq++
	q.ID = "confirm-" + strconv.Itoa(pc.seq)
}

// Ask implements approval.AskFunc for the call's code: it hands the
// question to the handler waiting on the call, and waits for the answer
// the client's next call brings, or for ctx.
func (pc *Pending) Ask(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	q := NewQuestion("", params)
	select {
	case pc.asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-q.answer:
		if r == nil {
			return nil, fmt.Errorf("the client's answer to %s is missing or not an elicitation result", q.ID)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A Question is one input request for the client: of a pending call, or
// of a task.
type Question struct {
	ID     string
	Params *mcp.ElicitParams
	answer chan *mcp.ElicitResult // buffered; nil: no usable answer
}

// NewQuestion returns the question id asking params.
func NewQuestion(id string, params *mcp.ElicitParams) *Question {
	return &Question{ID: id, Params: params, answer: make(chan *mcp.ElicitResult, 1)}
}

// Answer hands the question the client's answer (nil: none, or one that
// is not an elicitation result); call it once.
func (q *Question) Answer(r *mcp.ElicitResult) { q.answer <- r }

// Answered returns the channel of the question's answer.
func (q *Question) Answered() <-chan *mcp.ElicitResult { return q.answer }

// A suspension is a pending call waiting for the answer to a question.
type suspension struct {
	pc *Pending
	q  *Question
}

// Suspensions are the pending calls of a client session that wait for
// an answer, by request state. The zero value has none.
type Suspensions struct {
	mu sync.Mutex
	m  map[string]suspension
}

// Suspend records that pc waits for the answer to q and returns the
// request state that names it: 128 random bits.
func (w *Suspensions) Suspend(pc *Pending, q *Question) string {
	state := "run_python:" + rand.Text()
	w.SuspendAs(state, pc, q)
	return state
}

// SuspendAs records that pc waits for the answer to q under state.
func (w *Suspensions) SuspendAs(state string, pc *Pending, q *Question) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]suspension{}
	}
	w.m[state] = suspension{pc, q}
}

// Has reports whether a call waits under state.
func (w *Suspensions) Has(state string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[state]
	return ok
}

// Resumed returns and forgets the pending call and question that state
// names, if one waits.
func (w *Suspensions) Resumed(state string) (*Pending, *Question) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.m[state]
	if !ok {
		return nil, nil
	}
	delete(w.m, state)
	return s.pc, s.q
}

// Forget drops the questions of pc that were never answered: it ended.
func (w *Suspensions) Forget(pc *Pending) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for state, s := range w.m {
		if s.pc == pc {
			delete(w.m, state)
		}
	}
}
