package mcpbridge

import (
	"context"
	"io"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// confirm asks whether the code of session, in its call ci (nil: none in
// progress), may call tool of server with args, as the policy's verdict v
// says (approval.Confirm): of the client's user, or of an operator on
// the console when this bridge serves one. It returns the outcome, the
// audit record's fields saying where it was answered, or an error
// wrapping ErrPolicy saying why the call may not run.
func (b *Bridge) confirm(ctx context.Context, ci *callInfo, p *policy.Policy, v policy.Verdict, session, server, tool string, args map[string]any) (string, []any, error) {
	var board approval.Board // not a typed nil: no console
	if ap := b.approvals.Load(); ap != nil {
		board = consoleBoard{ap}
	}
	var call *approval.Call
	if ci != nil {
		call = &ci.Call
	}
	return approval.Confirm(ctx, call, board, b.log, approval.Request{Policy: p, Verdict: v, Session: session, Server: server, Tool: tool, Args: args})
}

// A consoleBoard is the console's questions as an approval.Board.
type consoleBoard struct{ q *console.Questions }

// Post implements approval.Board.
func (c consoleBoard) Post(q console.Question, args func(io.Writer) error) (string, <-chan approval.Answer, func()) {
	pq, withdraw := c.q.Post(q, args)
	return pq.ID(), pq.Answered(), withdraw
}
