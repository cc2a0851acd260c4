package mcpbridge

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolAsksByResult is the first protocol version on which a server
// asks the client by answering a request with input requests, which the
// client fulfils and sends again (SEP-2322), instead of asking during it.
const protocolAsksByResult = "2026-07-28"

// asksByResult reports whether the client of ss is asked through
// input-required results.
func asksByResult(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= protocolAsksByResult
}

// A pendingCall is a run_python call of a client asked through
// input-required results. It runs on its own, so that it can wait, its
// code paused in a proxied call, while its handler answers the client
// with a question and the client calls again with the answer (resume).
type pendingCall struct {
	done   chan *mcp.CallToolResult // its result, once (buffered)
	asks   chan *question           // questions for the client
	cancel context.CancelFunc       // interrupts the call
	seq    int                      // numbers its questions (under asks' send)
}

// A question is one input request of a pending call.
type question struct {
	id     string
	params *mcp.ElicitParams
	answer chan *mcp.ElicitResult // buffered; nil: no usable answer
}

// ask implements approval.AskFunc for the call's code: it hands the question to
// the handler waiting on the call, and waits for the answer the client's
// next call brings, or for ctx.
func (pc *pendingCall) ask(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	q := &question{params: params, answer: make(chan *mcp.ElicitResult, 1)}
	select {
	case pc.asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-q.answer:
		if r == nil {
			return nil, fmt.Errorf("the client's answer to %s is missing or not an elicitation result", q.id)
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A suspension is a pending call waiting for the answer to a question.
type suspension struct {
	pc *pendingCall
	q  *question
}

// suspensions are the pending calls of a client session that wait for an
// answer, by request state.
type suspensions struct {
	mu sync.Mutex
	m  map[string]suspension
}

// suspend records that pc waits for the answer to q and returns the
// request state that names it: 128 random bits.
func (w *suspensions) suspend(pc *pendingCall, q *question) string {
	state := "run_python:" + rand.Text()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]suspension{}
	}
	w.m[state] = suspension{pc, q}
	return state
}

// suspendAs records that pc waits for the answer to q under state.
func (w *suspensions) suspendAs(state string, pc *pendingCall, q *question) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]suspension{}
	}
	w.m[state] = suspension{pc, q}
}

// has reports whether a call waits under state.
func (w *suspensions) has(state string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[state]
	return ok
}

// resumed returns and forgets the pending call and question that state
// names, if one waits.
func (w *suspensions) resumed(state string) (*pendingCall, *question) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.m[state]
	if !ok {
		return nil, nil
	}
	delete(w.m, state)
	return s.pc, s.q
}

// forget drops the questions of pc that were never answered: it ended.
func (w *suspensions) forget(pc *pendingCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for state, s := range w.m {
		if s.pc == pc {
			delete(w.m, state)
		}
	}
}
