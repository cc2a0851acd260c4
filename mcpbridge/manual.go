package mcpbridge

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capabilitiesURI names the resource with the bridge's manual.
const capabilitiesURI = "resource://mcp-server-code-execution-mode/capabilities"

// runPythonDescription is the tool's description: a short manual. The
// whole tools/list result stays under 300 tokens whatever is configured:
// no server or tool is named here.
const runPythonDescription = `Run Python code in a persistent sandbox (no network, read-only filesystem; /tmp and /workspace writable). Variables, imports and functions persist between calls; top-level await works. What it prints comes back, with the images it shows (display(x), plt.show()) and the files it writes to /workspace/out.
Discover before calling: from mcp import runtime; print(runtime.discovered_servers()); print(await runtime.search_tool_docs("what you need")). Pass the servers you use in "servers", then call await mcp_<server>.<tool>(...).`

const serverInstructions = "Use run_python for computation and for every MCP tool: discover servers and tools from inside the code, then call them there."

func runPythonTool(def, max time.Duration, forks int) *mcp.Tool {
	t := &mcp.Tool{
		Name:        "run_python",
		Description: runPythonDescription,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"code": map[string]any{"type": "string", "description": "The Python to run"},
				"servers": map[string]any{
					"type": "array", "items": map[string]any{"type": "string"},
					"description": "Configured servers to connect; each becomes mcp_<alias>",
				},
				"timeout": map[string]any{
					"type": "integer", "minimum": 1, "maximum": int(max.Seconds()),
					"default": int(def.Seconds()), "description": "Seconds before it is interrupted",
				},
				"session": map[string]any{"type": "string", "description": "Handle from an earlier result, to continue in its sandbox"},
			},
			"required": []string{"code"},
		},
	}
	if forks > 0 {
		// Only where sandboxes fork (MCP_BRIDGE_SNAPSHOTS), within the
		// 300 tokens of tools/list: the timeout's minimum (1, which the
		// bridge clamps to anyway) and words of session's make room; the
		// bridge refuses more than forks copies, saying so.
		props := t.InputSchema.(map[string]any)["properties"].(map[string]any)
		delete(props["timeout"].(map[string]any), "minimum")
		props["session"] = map[string]any{"type": "string", "description": "Handle from an earlier result"}
		props["fork"] = map[string]any{"type": "integer", "description": "Copy the sandbox N times after the code"}
	}
	return t
}

func capabilitiesResource() *mcp.Resource {
	return &mcp.Resource{
		URI:         capabilitiesURI,
		Name:        "capabilities",
		Title:       "Code execution bridge: capabilities and helper API",
		Description: "How to discover and call MCP servers from run_python",
		MIMEType:    "text/markdown",
	}
}

// invalidParams is the JSON-RPC invalid-params error.
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

const capabilitiesManual = `# mcp-server-code-execution-mode

One tool, ` + "`run_python`" + `, runs Python in a persistent sandbox container: no network,
read-only root filesystem, writable tmpfs at /tmp and /workspace, unprivileged user,
memory/pids/cpu limits. Globals persist between calls; top-level await works.

## Arguments
- code (string, required): the Python source.
- servers (list of strings): MCP servers to load as ` + "`mcp_<alias>`" + ` proxies for this and later calls.
- timeout (integer seconds): interrupted after this long; the session keeps its state.
- session (string): the handle an earlier result gave (` + "`session: sb1_…`" + `); the call runs in that
  sandbox, with its variables. Without sessions (MCP 2026-07-28 over HTTP) a call without one
  starts a new sandbox and its result gives the handle.

## Checklist
1. Discover: ` + "`from mcp import runtime; runtime.discovered_servers()`" + `.
2. Find tools: describe the need in plain words, as a task
   (` + "`await runtime.search_tool_docs(\"open an issue about the crash\")`" + `), not a tool name;
   every configured server is searched. Each hit has the ` + "`signature`" + ` to call (ending in
   the shape of what it returns, when known: ` + "`returns`" + `) and a one-sentence ` + "`summary`" + `;
   ` + "`detail=\"full\"`" + ` adds the input schema. If no hit fits, search again in other words
   (the product's name, a synonym), or list one server's tools with
   ` + "`await runtime.query_tool_docs(\"server\")`" + `; ` + "`print(runtime.stubs(\"server\"))`" + ` shows its whole
   interface as .pyi text.
3. Load the servers you need by listing them in ` + "`servers`" + `.
4. Call: ` + "`await mcp_<server>.<tool>(arg=...)`" + ` and print what you need.

## Results
- Text: what the code prints. Past the output budget (32 KiB by default) the head and
  the tail are kept and the whole output is linked as ` + "`sandbox://output/N`" + `.
- Images: ` + "`display(obj)`" + ` (also ` + "`runtime.show`" + `) shows a matplotlib figure, a PIL image,
  PNG/JPEG/GIF/WebP/SVG bytes or a path to such a file; ` + "`plt.show()`" + ` and figures left
  open come back too. At most 10 images and 8 MiB per call; the rest is noted.
- Files: what a call creates or changes under /workspace/out comes back: images as
  images, files up to 256 KiB embedded, larger ones as links (` + "`sandbox://files/...`" + `)
  readable while the session's sandbox lives.
- Input: when the operator set one, a host directory is in /workspace/in (read-only).

## Long calls
What the code prints reaches a client that asked for progress while it runs;
` + "`runtime.report_progress(done, total, \"message\")`" + ` reports how far a long loop is
(a no-op when nobody listens; it never blocks).
`
