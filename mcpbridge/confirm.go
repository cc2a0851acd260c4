package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// maxConfirmArgs bounds the arguments shown in a confirmation question.
const maxConfirmArgs = 2 << 10

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
	params := &mcp.ElicitParams{
		Message:         confirmMessage(server, tool, args, p),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}
	var res *mcp.ElicitResult
	var err error
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

// confirmMessage is the question shown to the user: the server, the tool
// and the arguments (redacted as in audit records, at most 2 KiB).
func confirmMessage(server, tool string, args map[string]any, p *policy.Policy) string {
	data, err := json.MarshalIndent(audit.Redact(args, p.Redacts), "", "  ")
	shown := string(data)
	if err != nil {
		shown = "(arguments not shown: " + err.Error() + ")"
	} else if len(shown) > maxConfirmArgs {
		shown = strings.ToValidUTF8(shown[:maxConfirmArgs], "") + fmt.Sprintf("\n… (%d bytes in all)", len(data))
	}
	return fmt.Sprintf("Code running in the sandbox wants to call the tool %q of the MCP server %q with these arguments:\n%s\n\nAllow this call?",
		tool, server, shown)
}
