package servers

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// Stubs returns the interface of the tools of the configured server as
// .pyi-style text: a header naming the server and its proxy, then per tool
// the stub of its proxy function (keyword-only parameters with their
// types, the shape of what it returns, or Any when that is unknown) with
// its summary as the docstring; an observed shape is marked with the
// calls it rests on. The tools are those its docs show: none the policy
// denies or hides.
func (r *Route) Stubs(ctx context.Context, server string) (string, error) {
	alias, ok := r.set.aliases()[server]
	if !ok {
		//lint:ignore ST1005 the original's wording, which sandbox code may match
		return "", fmt.Errorf("Server %s is not configured", pyname.Repr(server))
	}
	tools, err := r.listed(ctx, server)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# MCP server %s: load it with run_python's servers=[%s], then await mcp_%s.<tool>(...)\n",
		pyname.Repr(server), pyname.Repr(server), alias)
	if sc, ok := r.set.opts.Registry.Lookup(server); ok && sc.Description != "" {
		fmt.Fprintf(&b, "# %s\n", oneLine(summaryOf(sc.Description)))
	}
	for _, d := range toolDocs(server, alias, tools, false, r.set.returnsOf(server)) {
		def := strings.TrimPrefix(d.Signature, "mcp_"+alias+".")
		if d.Returns == "" || strings.HasPrefix(d.Returns, "(") {
			def += " -> Any"
		}
		b.WriteString("\n")
		if d.ReturnsObserved > 0 {
			fmt.Fprintf(&b, "# returns: observed in %d call%s\n", d.ReturnsObserved, plural(d.ReturnsObserved))
		}
		if d.Summary == "" {
			fmt.Fprintf(&b, "async def %s: ...\n", def)
			continue
		}
		fmt.Fprintf(&b, "async def %s:\n    %q\n", def, oneLine(d.Summary))
	}
	return b.String(), nil
}

// oneLine returns s with its line breaks as spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// plural returns "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
