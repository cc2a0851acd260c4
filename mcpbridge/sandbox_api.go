package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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

// A toolMeta describes one tool of a loaded server to the sandbox API.
type toolMeta struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"`
	Description string `json:"description"`
	InputSchema any    `json:"input_schema"`
	// Params are the decoded input schema the sandbox turns into the
	// tool's signature.
	Params []toolParam `json:"params"`
}

// A serverMeta describes one loaded server to the sandbox API.
type serverMeta struct {
	Name        string     `json:"name"`
	Alias       string     `json:"alias"`
	Description string     `json:"description"`
	Cwd         string     `json:"cwd"`
	Tools       []toolMeta `json:"tools"`
	// Denied maps the names and aliases of the tools the policy denies
	// to their names: naming one gives a proxy function whose call the
	// bridge refuses, with a denied audit record, and which then raises
	// MCPToolDenied with the bridge's message (not an AttributeError
	// saying there is no such tool). They are in no list, doc or search.
	Denied map[string]string `json:"denied,omitempty"`
}

// configureCode returns the Python call that installs the proxies of the
// servers cs loaded, in load order, and says what their calls return
// (Options.ToolResults).
func (b *Bridge) configureCode(cs *clientSession, loaded []string) string {
	al := b.serverAliases()
	servers := []serverMeta{}
	for _, name := range loaded {
		sc, _ := b.opts.Registry.Lookup(name)
		tools, err := b.proxiesOf(cs).tools(context.Background(), name)
		if err != nil {
			b.log.Warn("loaded server has no tools to install", "server", name, "err", err)
		}
		m := serverMeta{Name: name, Alias: al[name], Description: sc.Description, Cwd: sc.Cwd, Tools: []toolMeta{}}
		for _, d := range toolDocs(name, al[name], tools, true) {
			params, err := toolParams(d.InputSchema)
			if err != nil {
				b.log.Warn("a tool's input schema is unusable; it gets no signature and its arguments are not checked",
					"server", name, "tool", d.Tool, "err", err)
			}
			if params == nil {
				params = []toolParam{}
			}
			m.Tools = append(m.Tools, toolMeta{Name: d.Tool, Alias: d.ToolAlias, Description: d.Description, InputSchema: d.InputSchema, Params: params})
		}
		m.Denied = b.proxiesOf(cs).denied(context.Background(), name, al[name])
		servers = append(servers, m)
	}
	data, _ := json.Marshal(map[string]any{"servers": servers, "tool_results": b.opts.ToolResults})
	return "_mcp_bridge_configure(__import__('json').loads(" + strconv.Quote(string(data)) + "))"
}
