package mcpbridge

// Compatibility with the original bridge: the places it reads server
// configurations from, the fields it reads there, and the spellings its
// sandbox helpers take.

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestOriginalConfigLocations writes one server into each place the
// original bridge reads (its newest version: ~/MCPs/*.json; its older
// ones: the Claude files of the home and the project, and the server
// directories) and finds them all, with a state directory elsewhere.
func TestOriginalConfigLocations(t *testing.T) {
	home, cwd, state := t.TempDir(), t.TempDir(), t.TempDir()
	appSupport := filepath.Join(home, "Library", "Application Support")
	locations := []string{
		filepath.Join(home, "MCPs", "a.json"),
		filepath.Join(home, ".claude.json"),
		filepath.Join(appSupport, "Claude Code", "claude_code_config.json"),
		filepath.Join(appSupport, "Claude", "claude_code_config.json"),
		filepath.Join(appSupport, "Claude", "claude_desktop_config.json"),
		filepath.Join(cwd, "claude_code_config.json"),
		filepath.Join(cwd, "claude_desktop_config.json"),
		filepath.Join(home, ".config", "mcp", "servers", "b.json"),
		filepath.Join(appSupport, "Claude Code", "mcp", "servers", "c.json"),
		filepath.Join(appSupport, "Claude", "mcp", "servers", "d.json"),
		filepath.Join(cwd, "mcp-servers", "e.json"),
		filepath.Join(cwd, "servers-from-env.json"),
	}
	var want []string
	for i, path := range locations {
		name := fmt.Sprintf("s%02d", i)
		write(t, path, `{"mcpServers": {"`+name+`": {"command": "srv"}}}`)
		want = append(want, name)
	}
	r := NewRegistry(DiscoveryOptions{Home: home, Cwd: cwd, StateDir: state, ServersConfig: locations[len(locations)-1]})
	got := names(r.servers())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("servers %v; want one from each of the original's locations %v", got, want)
	}
	for _, sc := range r.servers() {
		if i := slices.Index(want, sc.Name); sc.Source != locations[i] {
			t.Errorf("%s from %s; want %s", sc.Name, sc.Source, locations[i])
		}
	}
}

// TestOriginalFileDescription checks that a file's own description is
// the description of its servers that have none, as in the original.
func TestOriginalFileDescription(t *testing.T) {
	home := t.TempDir()
	write(t, filepath.Join(home, "MCPs", "tools.json"), `{"description": "the team's tools", "mcpServers": {
		"plain": {"command": "a"},
		"own": {"command": "b", "description": "its own"}
	}}`)
	r := NewRegistry(DiscoveryOptions{Home: home, Cwd: t.TempDir()})
	for name, want := range map[string]string{"plain": "the team's tools", "own": "its own"} {
		if sc, ok := r.lookup(name); !ok || sc.Description != want {
			t.Errorf("%s: description %q (found %v); want %q", name, sc.Description, ok, want)
		}
	}
}

// TestOriginalHelperSpellings calls the sandbox helpers the way code
// written for the original bridge calls them, through the bridge, a local
// python3 and the stub server: mcp.runtime without an import, a proxy's
// list_tools(), a tool's name in another case, detail and limit as the
// original reads them, and `except RuntimeError` around a failing proxy
// call (the original's proxies raised RuntimeError).
func TestOriginalHelperSpellings(t *testing.T) {
	cs, _ := connectClientWith(t, defaultConfig(), stubRegistry(t))
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
		"['description', 'inputSchema', 'server', 'serverAlias', 'signature', 'summary', 'tool', 'toolAlias']\n" +
		"True\n" +
		"True\n" +
		"RuntimeError: stub.read_text_file failed: no such file: /x\n" +
		"list_tools_sync(server) requires a server name"
	if res.IsError || text != want {
		t.Fatalf("got:\n%s\nwant:\n%s", text, want)
	}
}
