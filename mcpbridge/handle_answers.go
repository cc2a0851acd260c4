package mcpbridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
)

// A call in a handle's sandbox that waits for the client's answer
// (SEP-2322) waits on the replica that runs it, the sandbox's driver; the
// client's retry, with the answer, may reach any replica. Its request
// state is authenticated under the handle key and names the handle, so
// any replica can trust it and find the sandbox; a replica that does not
// hold the waiting call carries the answer to the one that does through
// the sandbox (answerDir: ID.in), and what the call answered next back
// (ID.out: its result, or its next question): records of sandboxfile,
// tagged under the handle key, so that neither the sandbox's code (which
// can write there) nor a file read while it is being written passes for
// them.

// handleStatePrefix begins the request state of a handle's waiting call:
// "rs1.ID.TAG.HANDLE", TAG authenticating ID and HANDLE.
const handleStatePrefix = "rs1."

// answerDir is where a handle's sandbox carries answers and what they
// led to between replicas: beside the kept outputs, out of the files out.
const answerDir = entrypoint.OutDir + "/.mcp-answers"

// Bounds of the carrying of answers.
const (
	maxAnswerBytes = 4 << 20
	answerPollMin  = 50 * time.Millisecond
	answerPollMax  = 500 * time.Millisecond
)

// newState returns a new request state of a waiting call of cs (a
// handle's session) and its ID.
func (hs *handles) newState(cs *clientSession) (state, id string) {
	id = strings.ToLower(rand.Text()[:16])
	return handleStatePrefix + id + "." + hs.keys.Tag(id, cs.handle) + "." + cs.handle, id
}

// parseState returns the ID and handle of a request state that newState
// made under this bridge's key; ok is false otherwise.
func (hs *handles) parseState(state string) (id, h string, ok bool) {
	rest, found := strings.CutPrefix(state, handleStatePrefix)
	if !found {
		return "", "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 || len(parts[0]) != 16 || !hs.keys.CheckTag(parts[1], parts[0], parts[2]) {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// suspend records that pc waits for the answer to q, as
// live.Suspensions.Suspend does, under a request state any replica can
// take the answer with; this replica watches the sandbox for an answer
// another brings.
func (hs *handles) suspend(cs *clientSession, pc *live.Pending, q *live.Question) string {
	state, id := hs.newState(cs)
	cs.waiting.SuspendAs(state, pc, q)
	go hs.watchAnswer(cs, pc, state, id)
	return state
}

// watchAnswer waits for the answer to the question of state brought by
// another replica into the sandbox, until the question is answered here
// or the call ends; it then hands the answer to the call and writes what
// the call answers next into the sandbox, for that replica.
func (hs *handles) watchAnswer(cs *clientSession, pc *live.Pending, state, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), hs.maxTimeout+time.Minute)
	defer cancel()
	wait := answerPollMin
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, answerPollMax)
		if !cs.waiting.Has(state) {
			return // answered here, or the call ended
		}
		data, err := hs.readAnswerFile(ctx, cs, id, "in", maxAnswerBytes)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				cs.events.log.Debug("looking for an answer another replica brought", "err", err)
			}
			continue
		}
		var responses mcp.InputResponseMap
		if err := json.Unmarshal(data, &responses); err != nil {
			cs.events.log.Warn("an answer another replica brought does not decode", "err", err)
			continue
		}
		pc2, q := cs.waiting.Resumed(state)
		if pc2 == nil {
			return
		}
		answer, _ := responses[q.ID].(*mcp.ElicitResult)
		q.Answer(answer)
		res := hs.awaitElsewhere(cs, pc2)
		out, err := json.Marshal(res)
		if err == nil {
			err = hs.writeAnswerFile(ctx, cs, id, "out", out)
		}
		if err != nil {
			cs.events.log.Warn("carrying a waiting call's result to another replica", "err", err)
		}
		return
	}
}

// awaitElsewhere waits for what pc answers after an answer another
// replica brought: its result, or its next question (suspended again).
func (hs *handles) awaitElsewhere(cs *clientSession, pc *live.Pending) *mcp.CallToolResult {
	select {
	case res := <-pc.Done():
		return res
	case q := <-pc.Asks():
		return hs.askClient(cs, pc, q)
	}
}

// askClient numbers q, the next question of pc, suspends pc for its
// answer, and returns the input-required result that asks the client,
// whose request state names the call: under a handle, a state any
// replica can take the answer with.
func (hs *handles) askClient(cs *clientSession, pc *live.Pending, q *live.Question) *mcp.CallToolResult {
	pc.Number(q)
	var state string
	if cs.handle != "" {
		state = hs.suspend(cs, pc, q)
	} else {
		state = cs.waiting.Suspend(pc, q)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: mcp.InputRequestMap{q.ID: q.Params}, RequestState: state}
}

// resumeElsewhere takes a client's answer for a waiting call this replica
// does not hold, by a request state another made: it brings the answer
// into the sandbox and waits there for what the call answers next. It
// returns nil when state is not such a state.
func (hs *handles) resumeElsewhere(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
	id, h, ok := hs.parseState(req.Params.RequestState)
	if !ok {
		return nil
	}
	mode := hs.outputMode
	token, client := clientToken(req)
	held, problem := hs.heldByHandle(h, token, client)
	if held == nil {
		return render.NotRun(problem).Result(mode)
	}
	cs := held.cs
	fail := func(msg string) *mcp.CallToolResult {
		return render.NotRun(msg).Result(mode)
	}
	answer, err := json.Marshal(req.Params.InputResponses)
	if err != nil || len(answer) > maxAnswerBytes {
		return fail("the answer cannot be carried to the call (too large, or not encodable)")
	}
	if err := hs.writeAnswerFile(ctx, cs, id, "in", answer); err != nil {
		return fail("carrying the answer to the waiting call: " + err.Error())
	}
	rctx, stop := hs.requests.Tie(ctx, req.Extra)
	defer stop()
	wctx, cancel := context.WithTimeout(rctx, hs.maxTimeout+30*time.Second)
	defer cancel()
	wait := answerPollMin
	for {
		select {
		case <-wctx.Done():
			return fail("the call waiting for this answer did not answer in time: the replica that runs it may have gone, and the call with it")
		case <-time.After(wait):
		}
		wait = min(2*wait, answerPollMax)
		data, err := hs.readAnswerFile(wctx, cs, id, "out", maxOutputRead)
		if errors.Is(err, entrypoint.ErrPinnedGone) {
			return fail("reading the call's answer: " + err.Error())
		}
		if err != nil {
			continue // not there yet, or being written
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(data, &res); err != nil {
			return fail("the call's answer does not decode: " + err.Error())
		}
		cs.events.log.Info("carried an answer to a call waiting on another replica", "handle", handle.Redact(h))
		return &res
	}
}

// writeAnswerFile writes data as the record ID.kind of answerDir in the
// sandbox of cs (sandboxfile), tagged with ID and kind.
func (hs *handles) writeAnswerFile(ctx context.Context, cs *clientSession, id, kind string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleOutputTimeout)
	defer cancel()
	return hs.files.WriteRecord(ctx, sandboxfile.Session(cs.session), answerDir, id+"."+kind, data, id, kind)
}

// readAnswerFile reads the record ID.kind of answerDir in the sandbox of
// cs and returns its data, once whole and with a good tag; else an error
// (fs.ErrNotExist while it is not there).
func (hs *handles) readAnswerFile(ctx context.Context, cs *clientSession, id, kind string, max int64) ([]byte, error) {
	return hs.files.ReadRecord(ctx, sandboxfile.Session(cs.session), answerDir, id+"."+kind, max, id, kind)
}
