package mcpbridge

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// sandboxAPI is the source of the sandbox API (sandbox_api.py): the
// helpers user code calls in the sandbox, installed in every interpreter.
//
//go:embed sandbox_api.py
var sandboxAPI string

// installTemplate is the Python that installs the sandbox API, its
// source quoted in place of the %s: it runs the source as a private
// module (named like the runtime's mcp_sandbox_runtime, but in no
// sys.modules), with its lines known to tracebacks, and calls its
// bind_namespace() on the user's globals, which defines _mcp_bridge_configure
// and _mcp_bridge_load_tool there. It leaves no other name behind.
const installTemplate = `def _mcp_bridge_install(source):
    import linecache, types
    filename = "<mcp-sandbox-api>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    api = types.ModuleType("mcp_sandbox_api")
    exec(compile(source, filename, "exec", dont_inherit=True), api.__dict__)
    api.bind_namespace(globals())
_mcp_bridge_install(%s)
del _mcp_bridge_install
`

// installCode is installTemplate with the sandbox API's source.
var installCode = fmt.Sprintf(installTemplate, strconv.Quote(sandboxAPI))

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
