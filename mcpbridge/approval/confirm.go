// Package approval asks a person whether sandbox code may make a proxied
// call that the tool policy says needs a confirmation: the client's user
// by elicitation (during the call, or through input-required results), an
// operator on the console (a Board), or both, the first answer winning.
// The question shows every argument, each cut to its share (question.go).
// The bridge calls it with the call in progress and the policy's verdict;
// it knows nothing of the bridge.
package approval

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// Confirmation outcomes, as audit records spell them.
const (
	outcomeAccepted = "accepted"
	outcomeDeclined = "declined"
	outcomeUnasked  = "allowed_without_elicitation"
)

// Where a confirm question was answered, in audit records (answered_via).
const (
	answeredByClient  = "client"
	answeredByConsole = "console"
	answeredByNobody  = "none"
)

// ElicitMaxProtocol is the last protocol version on which a server asks
// the client during a request; later ones ask through input-required
// results.
const ElicitMaxProtocol = "2025-11-25"

// An AskFunc puts a question to the client and returns its answer.
type AskFunc func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)

// A Call is the run_python call in progress whose code makes the proxied
// call to confirm: where a question to its client goes.
type Call struct {
	// Ctx is the MCP request's context: a question to the user sent with
	// it goes to the client on that request's stream (over HTTP, the
	// session that made the call), and ends with the call.
	Ctx context.Context
	// Session is the client's MCP session.
	Session *mcp.ServerSession
	// Ask, when set, asks the client through input-required results;
	// else the question elicits during the call.
	Ask AskFunc
}

// A Request is a proxied call the policy says a person confirms.
type Request struct {
	Policy  *policy.Policy
	Verdict policy.Verdict // the policy's confirm rule
	// Session is the name of the client session whose code calls, as the
	// console shows it.
	Session      string
	Server, Tool string
	Args         map[string]any
}

// A Board puts questions before an operator (the console) and brings
// their answers; *console.Questions is one, through the bridge.
type Board interface {
	// Post puts q (its ID set by the board) before the operator, args
	// writing the call's whole arguments when the operator asks for them,
	// and returns its ID, the channel of its first answer and the
	// function that takes it back.
	Post(q console.Question, args func(io.Writer) error) (id string, answer <-chan Answer, withdraw func())
}

// An Answer is an operator's answer to a question on a Board.
type Answer = console.Reply

// Confirm asks whether the code of call (nil: no run_python call is in
// progress) may make the proxied call r, of whom the policy names
// (confirm_via): the client's user by elicitation, an operator on board
// (nil: this bridge serves no console), or both, the first answer
// winning. It returns the outcome, the audit record's fields saying
// where it was answered (none when only the client could be asked, as
// before the console), or an error wrapping policy.ErrRefused saying why
// the call may not run. The question waits as long as ctx lets it; log
// says when one waits on the console.
func Confirm(ctx context.Context, call *Call, board Board, log *slog.Logger, r Request) (string, []any, error) {
	viaClient, viaConsole := r.Policy.ConfirmBy(r.Server)
	switch {
	case viaConsole && board != nil && call != nil:
		return confirmOnConsole(ctx, call, board, log, viaClient, r)
	case !viaClient:
		return outcomeDeclined, nil, fmt.Errorf("%w: %s.%s needs an operator's answer on the console (%s, confirm_via) and this bridge serves no console (MCP_BRIDGE_CONSOLE_TOKEN)",
			policy.ErrRefused, r.Server, r.Tool, r.Verdict.Rule)
	}
	outcome, err := confirmByClient(ctx, call, r)
	return outcome, nil, err
}

// confirmOnConsole puts the question on the console and, when viaClient
// is set and the client can be asked, to the client as well; the first
// answer wins, and the other question is withdrawn.
func confirmOnConsole(ctx context.Context, call *Call, board Board, log *slog.Logger, viaClient bool, r Request) (string, []any, error) {
	server, tool, args, redacts := r.Server, r.Tool, r.Args, r.Policy.Redacts
	line := codeLineOf(ctx)
	msg, err := confirmMessage(server, tool, args, redacts, line)
	if err != nil {
		return outcomeDeclined, nil, fmt.Errorf("%w: %s.%s needs an operator's confirmation (%s) and cannot be shown: %v", policy.ErrRefused, server, tool, r.Verdict.Rule, err)
	}
	shown, _ := showArguments(args, redacts)
	q := console.Question{Session: r.Session, Server: escapeFormat(server), Tool: escapeFormat(tool), Message: msg,
		Arguments: shown, ArgumentsBytes: argumentsLength(args, redacts), Line: line}
	id, answer, withdraw := board.Post(q, func(w io.Writer) error {
		_, err := WriteArguments(w, args, redacts)
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
	if viaClient && call.Session != nil && cannotElicit(call.Session, call.Ask != nil) == "" {
		fromClient = make(chan clientAnswer, 1)
		asked = "on the console or by the client"
		go func() {
			outcome, err := confirmByClient(qctx, call, r)
			fromClient <- clientAnswer{outcome, err}
		}()
	}
	log.Info("a call waits for an operator's answer on the console", "session", r.Session, "server", server, "tool", tool, "question", id)
	select {
	case a := <-answer:
		extra := []any{"answered_via", answeredByConsole, "answered_by", a.By}
		if a.Approve {
			return outcomeAccepted, extra, nil
		}
		return outcomeDeclined, extra, fmt.Errorf("%w: %s.%s was declined by the operator %q on the console", policy.ErrRefused, server, tool, a.By)
	case a := <-fromClient:
		return a.outcome, []any{"answered_via", answeredByClient}, a.err
	case <-ctx.Done():
		return outcomeDeclined, []any{"answered_via", answeredByNobody}, fmt.Errorf("%w: %s.%s was not confirmed: nobody answered %s before the call ended (%v)",
			policy.ErrRefused, server, tool, asked, ctx.Err())
	}
}

// confirmByClient asks the user whether the code of call may make the
// proxied call r, through MCP elicitation, and returns the outcome
// (accepted, or allowed without asking when the client cannot be asked
// and the policy says so) or an error wrapping policy.ErrRefused saying
// why the call may not run. The question waits as long as ctx lets it.
func confirmByClient(ctx context.Context, call *Call, r Request) (string, error) {
	p, server, tool, rule := r.Policy, r.Server, r.Tool, r.Verdict.Rule
	if call == nil || call.Session == nil {
		return outcomeDeclined, fmt.Errorf("%w: %s.%s needs a person's confirmation (%s) and no run_python call is in progress to ask from",
			policy.ErrRefused, server, tool, rule)
	}
	if why := cannotElicit(call.Session, call.Ask != nil); why != "" {
		if p.ConfirmUnasked() {
			return outcomeUnasked, nil
		}
		return outcomeDeclined, fmt.Errorf("%w: %s.%s needs a person's confirmation (%s) and this MCP client cannot be asked "+
			"(%s); the policy's \"confirm_without_elicitation\": \"allow\" runs such tools unasked",
			policy.ErrRefused, server, tool, rule, why)
	}
	msg, err := confirmMessage(server, tool, r.Args, p.Redacts, codeLineOf(ctx))
	if err != nil {
		return outcomeDeclined, fmt.Errorf("%w: %s.%s needs a person's confirmation (%s) and cannot be shown: %v", policy.ErrRefused, server, tool, rule, err)
	}
	params := &mcp.ElicitParams{
		Message:         msg,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}
	var res *mcp.ElicitResult
	if call.Ask != nil {
		res, err = call.Ask(ctx, params)
	} else {
		// The question goes with the MCP request (its values) and ends
		// with the proxied call's context (the call's timeout, a cancel).
		qctx, cancel := context.WithCancel(call.Ctx)
		stop := context.AfterFunc(ctx, cancel)
		res, err = call.Session.Elicit(qctx, params)
		stop()
		cancel()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return outcomeDeclined, fmt.Errorf("%w: %s.%s was not confirmed: asking the user failed: %v", policy.ErrRefused, server, tool, err)
	}
	switch res.Action {
	case "accept":
		return outcomeAccepted, nil
	case "decline", "cancel":
		return outcomeDeclined, fmt.Errorf("%w: %s.%s was declined by the user (%s)", policy.ErrRefused, server, tool, res.Action)
	default:
		return outcomeDeclined, fmt.Errorf("%w: %s.%s was not confirmed: the client answered with action %q", policy.ErrRefused, server, tool, res.Action)
	}
}

// cannotElicit says why the client of ss cannot be asked, or "" when it
// can; byResult says it is asked through input-required results.
func cannotElicit(ss *mcp.ServerSession, byResult bool) string {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return "it has no elicitation capability"
	}
	if ip.ProtocolVersion > ElicitMaxProtocol && !byResult {
		return "protocol " + ip.ProtocolVersion + " asks through input-required results, and this call cannot wait for one"
	}
	return ""
}
