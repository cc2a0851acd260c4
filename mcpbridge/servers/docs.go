package servers

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// A toolDoc documents one tool of one server.
type toolDoc struct {
	Server      string `json:"server"`
	ServerAlias string `json:"serverAlias"`
	Tool        string `json:"tool"`
	ToolAlias   string `json:"toolAlias"`
	Description string `json:"description,omitempty"`
	// Signature is how the sandbox calls it:
	// mcp_github.create_issue(*, owner: str, title: str, body: str = None).
	Signature string `json:"signature,omitempty"`
	// Summary is the first sentence of its description.
	Summary string `json:"summary,omitempty"`
	// Returns is the shape of what it returns (shapes' notation): its
	// output schema's, else the one observed of its results.
	Returns string `json:"returns,omitempty"`
	// ReturnsObserved is the number of calls an observed Returns rests
	// on; 0 for a declared one.
	ReturnsObserved int `json:"returnsObserved,omitempty"`
	InputSchema     any `json:"inputSchema,omitempty"`
	Score           int `json:"score,omitempty"`
}

// A returnsFunc says what a tool returns, and the calls an observed
// shape rests on (results.returns).
type returnsFunc func(t *mcp.Tool) (text string, observed int)

// toolDocs documents the tools of a server, with what each returns when
// ret knows it (nil: nothing is known); full adds input schemas.
func toolDocs(server, serverAlias string, tools []*mcp.Tool, full bool, ret returnsFunc) []toolDoc {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	al := pyname.Aliases(names, "tool")
	docs := make([]toolDoc, len(tools))
	for i, t := range tools {
		docs[i] = toolDoc{Server: server, ServerAlias: serverAlias, Tool: t.Name, ToolAlias: al[i], Description: t.Description,
			Signature: signature(serverAlias, al[i], t.InputSchema), Summary: summaryOf(t.Description)}
		if ret != nil {
			docs[i].Returns, docs[i].ReturnsObserved = ret(t)
			if docs[i].Returns != "" && !strings.HasPrefix(docs[i].Returns, "(") {
				docs[i].Signature += " -> " + docs[i].Returns
			}
		}
		if full {
			docs[i].InputSchema = t.InputSchema
		}
	}
	return docs
}

// maxSummary bounds a tool's summary, in bytes.
const maxSummary = 200

// signature renders how sandbox code calls a tool: its proxy's Python
// signature, keyword-only, required parameters first as the proxy has
// them, the others defaulting to None; properties that cannot be Python
// parameters go through **arguments. A schema it cannot read gives
// (**arguments).
func signature(serverAlias, toolAlias string, schema any) string {
	params, err := ParamsOf(schema)
	var parts, extra []string
	for _, p := range params {
		if p.Kind == paramExtra {
			extra = append(extra, p.Name)
			continue
		}
		part := p.Name + ": " + p.Annotation
		if !p.Required {
			part += " = None"
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		parts = append([]string{"*"}, parts...)
	}
	if err != nil || len(extra) > 0 {
		parts = append(parts, "**arguments")
	}
	return "mcp_" + serverAlias + "." + toolAlias + "(" + strings.Join(parts, ", ") + ")"
}

// summaryOf returns the first sentence of a description (FirstSentence),
// trimmed, at most maxSummary bytes (cut at a word).
func summaryOf(desc string) string {
	desc, _ = toolsearch.FirstSentence(strings.TrimSpace(desc))
	desc = strings.TrimSpace(desc)
	if len(desc) > maxSummary {
		cut := strings.LastIndexByte(desc[:maxSummary], ' ')
		if cut < maxSummary/2 {
			cut = maxSummary
		}
		desc = strings.ToValidUTF8(desc[:cut], "") + "…"
	}
	return desc
}
