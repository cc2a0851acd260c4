package mcpbridge

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// Confirmation outcomes, as audit records spell them.
const (
	outcomeAccepted = "accepted"
	outcomeDeclined = "declined"
	outcomeUnasked  = "allowed_without_elicitation"
)

// confirmByClient asks the user whether the code may call tool of server
// with args, through MCP elicitation, and returns the outcome (accepted, or
// allowed without asking when the client cannot be asked and the policy
// says so) or an error wrapping ErrPolicy saying why the call may not run.
// The question waits as long as the call's context lets it.
func (b *Bridge) confirmByClient(ctx context.Context, ci *callInfo, p *policy.Policy, v policy.Verdict, server, tool string, args map[string]any) (string, error) {
	if ci == nil || ci.ss == nil {
		return outcomeDeclined, fmt.Errorf("%w: %s.%s needs a person's confirmation (%s) and no run_python call is in progress to ask from",
			ErrPolicy, server, tool, v.Rule)
	}
	if why := cannotElicit(ci.ss, ci.ask != nil); why != "" {
		if p.ConfirmUnasked() {
			return outcomeUnasked, nil
		}
		return outcomeDeclined, fmt.Errorf("%w: %s.%s needs a person's confirmation (%s) and this MCP client cannot be asked "+
			"(%s); the policy's \"confirm_without_elicitation\": \"allow\" runs such tools unasked",
			ErrPolicy, server, tool, v.Rule, why)
	}
	msg, err := confirmMessage(server, tool, args, p, codeLineOf(ctx))
	if err != nil {
		return outcomeDeclined, fmt.Errorf("%w: %s.%s needs a person's confirmation (%s) and cannot be shown: %v", ErrPolicy, server, tool, v.Rule, err)
	}
	params := &mcp.ElicitParams{
		Message:         msg,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}
	var res *mcp.ElicitResult
	if ci.ask != nil {
		res, err = ci.ask(ctx, params)
	} else {
		// The question goes with the MCP request (its values) and ends
		// with the proxied call's context (the call's timeout, a cancel).
		qctx, cancel := context.WithCancel(ci.ctx)
		stop := context.AfterFunc(ctx, cancel)
		res, err = ci.ss.Elicit(qctx, params)
		stop()
		cancel()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return outcomeDeclined, fmt.Errorf("%w: %s.%s was not confirmed: asking the user failed: %v", ErrPolicy, server, tool, err)
	}
	switch res.Action {
	case "accept":
		return outcomeAccepted, nil
	case "decline", "cancel":
		return outcomeDeclined, fmt.Errorf("%w: %s.%s was declined by the user (%s)", ErrPolicy, server, tool, res.Action)
	default:
		return outcomeDeclined, fmt.Errorf("%w: %s.%s was not confirmed: the client answered with action %q", ErrPolicy, server, tool, res.Action)
	}
}

// elicitMaxProtocol is the last protocol version on which a server asks
// the client during a request; later ones ask through input-required
// results (suspend.go).
const elicitMaxProtocol = "2025-11-25"

// cannotElicit says why the client of ss cannot be asked, or "" when it
// can; byResult says it is asked through input-required results.
func cannotElicit(ss *mcp.ServerSession, byResult bool) string {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return "it has no elicitation capability"
	}
	if ip.ProtocolVersion > elicitMaxProtocol && !byResult {
		return "protocol " + ip.ProtocolVersion + " asks through input-required results, and this call cannot wait for one"
	}
	return ""
}

// confirmMessage is the question shown to the user: the server, the
// tool, every top-level argument (redacted as in audit records, each
// value cut to its share with its whole length stated, format characters
// escaped: showArguments) and, when the sandbox says which (line > 0),
// the line of code that asks, labelled as the sandbox's claim. It fails
// when the arguments cannot be shown whole enough (errTooManyArguments).
func confirmMessage(server, tool string, args map[string]any, p *policy.Policy, line int) (string, error) {
	shown, err := showArguments(args, p.Redacts)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Code running in the sandbox wants to call the tool %q of the MCP server %q with %d argument(s) "+
		"(each value shown up to its share, whole lengths stated; secrets redacted; invisible characters escaped):\n%s\n",
		tool, server, len(args), shown)
	if line > 0 {
		fmt.Fprintf(&b, "\nThe sandbox says this call comes from line %d of its code (its claim, not checked).\n", line)
	}
	b.WriteString("\nAllow this call?")
	return b.String(), nil
}

// maxCodeLine bounds the line a sandbox may claim a call comes from.
const maxCodeLine = 10_000_000

type codeLineKey struct{}

// withCodeLine returns ctx carrying line, the line of the run_python code
// a proxied call comes from, when it is one (1 to maxCodeLine; the
// sandbox says so, so it is shown, never trusted).
func withCodeLine(ctx context.Context, line int) context.Context {
	if line < 1 || line > maxCodeLine {
		return ctx
	}
	return context.WithValue(ctx, codeLineKey{}, line)
}

// codeLineOf returns the line ctx carries, or 0.
func codeLineOf(ctx context.Context) int {
	line, _ := ctx.Value(codeLineKey{}).(int)
	return line
}
