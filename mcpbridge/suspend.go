package mcpbridge

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

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

// An askFunc puts a question to the client and returns its answer.
type askFunc func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)

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

// ask implements askFunc for the call's code: it hands the question to
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

// runSuspendable starts the call on its own and waits for its answer or
// its first question. finish records the call when it ends.
func (b *Bridge) runSuspendable(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, args callArgs, log *slog.Logger, finish func(*mcp.CallToolResult, int)) *mcp.CallToolResult {
	began := time.Now()
	pc := &pendingCall{done: make(chan *mcp.CallToolResult, 1), asks: make(chan *question)}
	// The call outlives this request when it asks; it keeps the
	// request's values, and ends with its MCP session.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pc.cancel = cancel
	stopHalt := context.AfterFunc(cs.halted, cancel)
	go func() {
		defer cancel()
		defer stopHalt()
		res, outBytes := b.execute(cctx, req, cs, args, log, pc.ask)
		cs.forget(pc)
		log.Debug("run_python answered", "status", resultStatus(res), "took", time.Since(began))
		finish(res, outBytes)
		pc.done <- res
	}()
	return b.await(ctx, req, cs, pc)
}

// await waits for the pending call's result, or for a question, which it
// returns to the client as an input-required result whose request state
// names the call. The client's request going away while the call runs
// interrupts the call, as for any call; while it waits for an answer,
// it does not.
func (b *Bridge) await(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, pc *pendingCall) *mcp.CallToolResult {
	rctx, stop := b.callContext(ctx, req.Extra)
	defer stop()
	select {
	case res := <-pc.done:
		return res
	case q := <-pc.asks:
		pc.seq++
		q.id = "confirm-" + strconv.Itoa(pc.seq)
		state := cs.suspend(pc, q)
		return &mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: mcp.InputRequestMap{q.id: q.params}, RequestState: state}
	case <-rctx.Done():
		pc.cancel()
		return <-pc.done
	}
}

// resume takes the client's answer to a pending call's question (the
// call's request state and its input responses) to the call, and waits
// for it again.
func (b *Bridge) resume(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	mode := b.opts.OutputMode
	cs, err := b.sessionOf(req.Session)
	if err != nil {
		return outcome{status: statusError, summary: "Sandbox error: " + err.Error(), err: err.Error()}.toolResult(mode)
	}
	pc, q := cs.resumed(req.Params.RequestState)
	if pc == nil {
		msg := "this answer matches no call waiting for one in this session (it ended, timed out, or was answered already); call run_python again"
		return outcome{status: statusError, summary: "Not run: " + msg, err: msg}.toolResult(mode)
	}
	answer, _ := req.Params.InputResponses[q.id].(*mcp.ElicitResult)
	q.answer <- answer
	return b.await(ctx, req, cs, pc)
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
func (cs *clientSession) suspend(pc *pendingCall, q *question) string {
	state := "run_python:" + rand.Text()
	cs.waiting.mu.Lock()
	defer cs.waiting.mu.Unlock()
	if cs.waiting.m == nil {
		cs.waiting.m = map[string]suspension{}
	}
	cs.waiting.m[state] = suspension{pc, q}
	return state
}

// resumed returns and forgets the pending call and question that state
// names, if one waits.
func (cs *clientSession) resumed(state string) (*pendingCall, *question) {
	cs.waiting.mu.Lock()
	defer cs.waiting.mu.Unlock()
	s, ok := cs.waiting.m[state]
	if !ok {
		return nil, nil
	}
	delete(cs.waiting.m, state)
	return s.pc, s.q
}

// forget drops the questions of pc that were never answered: it ended.
func (cs *clientSession) forget(pc *pendingCall) {
	cs.waiting.mu.Lock()
	defer cs.waiting.mu.Unlock()
	for state, s := range cs.waiting.m {
		if s.pc == pc {
			delete(cs.waiting.m, state)
		}
	}
}
