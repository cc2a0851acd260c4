package mcpbridge

// Compatibility with the original bridge: the spellings its sandbox
// helpers take. The places it reads server configurations from, and the
// fields it reads there, are discovery's (mcpbridge/discovery).

import "testing"

// TestOriginalHelperSpellings calls the sandbox helpers the way code
// written for the original bridge calls them, through the bridge, a local
// python3 and the stub server: mcp.runtime without an import, a proxy's
// list_tools(), a tool's name in another case, detail and limit as the
// original reads them, and `except RuntimeError` around a failing proxy
// call (the original's proxies raised RuntimeError).
func TestOriginalHelperSpellings(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{Registry: stubRegistry(t)})
	code := `print(sorted(t["name"] for t in await mcp_stub.list_tools()))
print(mcp.runtime.query_tool_docs_sync("stub", "ECHO")["tool"])
print(sorted((await mcp.runtime.query_tool_docs("stub", "Get-Sum", detail="FULL")).keys()))
print(len(mcp.runtime.search_tool_docs_sync("add numbers", limit=None)) > 0)
print(len(await mcp.runtime.search_tool_docs("file", limit="many", detail=None)) > 0)
try:
    await mcp_stub.read_text_file(path="/x")
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    mcp.runtime.list_tools_sync()
except mcp.runtime.MCPError as e:
    print(e)`
	res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": code})
	want := "['crash', 'echo', 'get-sum', 'read_text_file']\n" +
		"echo\n" +
		"['description', 'inputSchema', 'returns', 'server', 'serverAlias', 'signature', 'summary', 'tool', 'toolAlias']\n" +
		"True\n" +
		"True\n" +
		"RuntimeError: stub.read_text_file failed: no such file: /x\n" +
		"list_tools_sync(server) requires a server name"
	if res.IsError || text != want {
		t.Fatalf("got:\n%s\nwant:\n%s", text, want)
	}
}
