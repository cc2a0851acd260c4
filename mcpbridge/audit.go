package mcpbridge

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/httpserve"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// auditRunPython writes the record of a run_python call into log (nil:
// none).
func auditRunPython(log *audit.Log, req *mcp.CallToolRequest, cs *clientSession, args callArgs, began time.Time, status string, outBytes int) {
	if log == nil {
		return
	}
	r := audit.RunPython{
		Code: args.code, Servers: args.servers, Began: began, Status: status, OutputBytes: outBytes,
		Session: sessionName(cs), MCPSession: mcpSessionID(req.Session),
	}
	if id := httpserve.IdentityOf(req.Extra); id != nil {
		r.Issuer, r.Subject = id.Issuer, id.Subject
	}
	log.RunPython(r)
}

// auditToolCall writes the record of a proxied call of tool of server
// into log (nil: none), its arguments redacted as p says; extra holds
// more fields, as key, value pairs.
func auditToolCall(log *audit.Log, cs *clientSession, p *policy.Policy, server, tool string, args map[string]any, began time.Time, outcome string, err error, extra ...any) {
	if log == nil {
		return
	}
	var ss *mcp.ServerSession
	r := audit.ToolCall{
		Server: server, Tool: tool, Arguments: args, Redacts: p.Redacts,
		Began: began, Outcome: outcome, Err: err, Extra: extra,
		Session: sessionName(cs),
	}
	if ci := cs.current.Load(); ci != nil {
		ss = ci.Session
		if ci.who != nil {
			r.Issuer, r.Subject = ci.who.Issuer, ci.who.Subject
		}
	}
	r.MCPSession = mcpSessionID(ss)
	log.ToolCall(r)
}

// sessionName returns the name of cs, or "" for nil.
func sessionName(cs *clientSession) string {
	if cs == nil {
		return ""
	}
	return cs.name
}

// mcpSessionID returns the ID of ss, or "" for nil.
func mcpSessionID(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	return ss.ID()
}
