package mcpbridge

import (
	"context"
	"fmt"
	"io"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// Where a confirm question was answered, in audit records (answered_via).
const (
	answeredByClient  = "client"
	answeredByConsole = "console"
	answeredByNobody  = "none"
)

// confirm asks whether the code of session may call tool of server with
// args, of whom the policy names (confirm_via): the client's user by
// elicitation, an operator on the console, or both, the first answer
// winning. It returns the outcome, the audit record's fields saying
// where it was answered (none when only the client could be asked, as
// before the console), or an error wrapping ErrPolicy saying why the
// call may not run. The question waits as long as ctx lets it.
func (b *Bridge) confirm(ctx context.Context, ci *callInfo, p *policy.Policy, v policy.Verdict, session, server, tool string, args map[string]any) (string, []any, error) {
	viaClient, viaConsole := p.ConfirmBy(server)
	ap := b.approvals.Load()
	switch {
	case viaConsole && ap != nil && ci != nil:
		return b.confirmOnConsole(ctx, ap, ci, p, v, viaClient, session, server, tool, args)
	case !viaClient:
		return outcomeDeclined, nil, fmt.Errorf("%w: %s.%s needs an operator's answer on the console (%s, confirm_via) and this bridge serves no console (MCP_BRIDGE_CONSOLE_TOKEN)",
			ErrPolicy, server, tool, v.Rule)
	}
	outcome, err := b.confirmByClient(ctx, ci, p, v, server, tool, args)
	return outcome, nil, err
}

// confirmOnConsole puts the question on the console and, when viaClient
// is set and the client can be asked, to the client as well; the first
// answer wins, and the other question is withdrawn.
func (b *Bridge) confirmOnConsole(ctx context.Context, ap *console.Questions, ci *callInfo, p *policy.Policy, v policy.Verdict, viaClient bool, session, server, tool string, args map[string]any) (string, []any, error) {
	line := codeLineOf(ctx)
	msg, err := confirmMessage(server, tool, args, p, line)
	if err != nil {
		return outcomeDeclined, nil, fmt.Errorf("%w: %s.%s needs an operator's confirmation (%s) and cannot be shown: %v", ErrPolicy, server, tool, v.Rule, err)
	}
	shown, _ := showArguments(args, p.Redacts)
	q := console.Question{Session: session, Server: escapeFormat(server), Tool: escapeFormat(tool), Message: msg,
		Arguments: shown, ArgumentsBytes: argumentsLength(args, p.Redacts), Line: line}
	pq, withdraw := ap.Post(q, func(w io.Writer) error {
		_, err := writeArguments(w, args, p.Redacts)
		return err
	})
	defer withdraw()
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type clientAnswer struct {
		outcome string
		err     error
	}
	var fromClient chan clientAnswer // nil: the client is not asked
	asked := "on the console"
	if viaClient && ci.ss != nil && cannotElicit(ci.ss, ci.ask != nil) == "" {
		fromClient = make(chan clientAnswer, 1)
		asked = "on the console or by the client"
		go func() {
			outcome, err := b.confirmByClient(qctx, ci, p, v, server, tool, args)
			fromClient <- clientAnswer{outcome, err}
		}()
	}
	b.log.Info("a call waits for an operator's answer on the console", "session", session, "server", server, "tool", tool, "question", pq.ID())
	select {
	case a := <-pq.Answered():
		extra := []any{"answered_via", answeredByConsole, "answered_by", a.By}
		if a.Approve {
			return outcomeAccepted, extra, nil
		}
		return outcomeDeclined, extra, fmt.Errorf("%w: %s.%s was declined by the operator %q on the console", ErrPolicy, server, tool, a.By)
	case a := <-fromClient:
		return a.outcome, []any{"answered_via", answeredByClient}, a.err
	case <-ctx.Done():
		return outcomeDeclined, []any{"answered_via", answeredByNobody}, fmt.Errorf("%w: %s.%s was not confirmed: nobody answered %s before the call ended (%v)",
			ErrPolicy, server, tool, asked, ctx.Err())
	}
}
