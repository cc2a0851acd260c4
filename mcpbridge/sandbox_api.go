package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// installCode is the Python that installs the sandbox API in a new
// interpreter: it imports the module the runtime ships it as
// (mcp_sandbox_api, entrypoint/sandbox_api/sandbox_api.py) and calls its
// bind_namespace() on the user's globals, which defines
// _mcp_bridge_configure and _mcp_bridge_load_tool there. It leaves no
// other name behind.
const installCode = `__import__("mcp_sandbox_api").bind_namespace(globals())
`

// initCode returns the code a new interpreter of the client session cs
// runs before its first call: the sandbox API, the saved tools, then the
// proxies of the servers the session has loaded.
func (b *Bridge) initCode(cs *clientSession) string {
	return installCode + b.savedToolsCode() + b.configureCode(cs, cs.state.servers())
}

// savedToolsCode returns the code that defines the tools saved with
// save_tool, each on its own so one broken tool spares the others.
func (b *Bridge) savedToolsCode() string {
	var sb strings.Builder
	for name, src := range b.store.toolSources() {
		fmt.Fprintf(&sb, "_mcp_bridge_load_tool(%s, %s)\n", strconv.Quote(name), strconv.Quote(src))
	}
	return sb.String()
}

// configureCode returns the Python call that installs the proxies of the
// servers cs loaded, in load order, and says what their calls return
// (Options.ToolResults).
func (b *Bridge) configureCode(cs *clientSession, loaded []string) string {
	meta := []servers.ServerMeta{}
	if len(loaded) > 0 {
		meta = cs.servers.Meta(context.Background(), loaded)
	}
	data, _ := json.Marshal(map[string]any{"servers": meta, "tool_results": b.opts.ToolResults})
	return "_mcp_bridge_configure(__import__('json').loads(" + strconv.Quote(string(data)) + "))"
}
