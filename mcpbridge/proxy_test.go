package mcpbridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/stubserver"
)

// The environment of the stub server (internal/stubserver), which the
// test binary serves on stdio instead of running tests, so that the
// bridge proxies a real process.
const (
	stubServerEnv     = stubserver.ServerEnv
	stubNoiseEnv      = stubserver.NoiseEnv
	stubStartDelayEnv = stubserver.StartDelayEnv
	stubSlowEnv       = stubserver.SlowEnv
)

func TestMain(m *testing.M) {
	stubserver.Main()
	os.Exit(m.Run())
}

// stubRegistry returns a registry whose "stub" and
// "Stub Two" servers are this test binary in stub-server mode.
func stubRegistry(t *testing.T) *discovery.Registry {
	t.Helper()
	home := t.TempDir()
	self, _ := os.Executable()
	write(t, filepath.Join(home, "MCPs", "stub.json"), `{"mcpServers": {
		"stub": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}, "description": "a stub server"},
		"Stub Two": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}},
		"noisy": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1", "`+stubNoiseEnv+`": "1"}}
	}}`)
	// The stub is this very executable, which the registry would skip as
	// a self-entry without the override.
	return discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})
}

func TestProxiedServers(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{Registry: stubRegistry(t)})
	run := func(args map[string]any) (string, bool) {
		t.Helper()
		res, text, _ := call(t, cs, args)
		return text, res.IsError
	}
	// Discovery works before anything is loaded.
	if text, isErr := run(map[string]any{"code": "from mcp import runtime\nprint(runtime.discovered_servers())\nprint(runtime.list_servers_sync())"}); isErr ||
		text != "('Stub Two', 'noisy', 'stub')\n()" {
		t.Fatalf("discovery: %q", text)
	}
	// Search in the agent's own words, across servers not loaded yet.
	text, isErr := run(map[string]any{"code": "from mcp import runtime\nfor h in await runtime.search_tool_docs(\"read a file's contents\", limit=2):\n    print(h['server'], h['tool'], h['toolAlias'])"})
	if isErr || !strings.HasPrefix(text, "Stub Two read_text_file read_text_file\n") && !strings.HasPrefix(text, "stub read_text_file read_text_file\n") {
		t.Fatalf("search: %q", text)
	}
	if text, _ := run(map[string]any{"code": "from mcp import runtime\nprint(runtime.search_tool_docs_sync('add two numbers')[0]['tool'])"}); text != "get-sum" {
		t.Fatalf("search for a sum: %q", text)
	}
	// A server not loaded cannot be called.
	if text, _ := run(map[string]any{"code": "from mcp import runtime\ntry:\n    await runtime.call_tool('stub', 'echo', {'message': 'x'})\nexcept runtime.MCPError as e:\n    print(e)"}); text != `Server 'stub' is not available` {
		t.Fatalf("unloaded call: %q", text)
	}
	// Load and call; aliases; proxies survive into later calls.
	text, isErr = run(map[string]any{"servers": []string{"stub", "Stub Two"}, "code": "print(await mcp_stub.echo(message='hi'))\nprint(await mcp_stub_two.get_sum(a=2, b=3))\nprint(LOADED_MCP_SERVERS, sorted(mcp_servers))"})
	if isErr || text != "hi\n{'sum': 5}\n('stub', 'Stub Two') ['Stub Two', 'stub']" {
		t.Fatalf("proxied calls: %q", text)
	}
	text, isErr = run(map[string]any{"code": "import inspect\nfrom mcp.servers.stub import *\nprint(inspect.signature(echo))\nprint(await get_sum(a=1, b=1))\nprint('Echo the provided message' in mcp_stub.echo.__doc__)"})
	if isErr || text != "(*, message: 'str')\n{'sum': 2}\nTrue" {
		t.Fatalf("module import and signature: %q", text)
	}
	// Argument errors before any call; tool errors as MCPError.
	text, _ = run(map[string]any{"code": `for coro in (lambda: mcp_stub.echo(), lambda: mcp_stub.echo(message='a', nope=1), lambda: mcp_stub.read_text_file(path='/x')):
    try:
        await coro()
    except MCPError as e:
        print(type(e).__name__, e)`})
	want := "MCPArgumentError echo() is missing required argument(s): message\n" +
		"MCPArgumentError echo() got unknown argument(s) nope; its parameters are: message\n" +
		"MCPError stub.read_text_file failed: no such file: /x"
	if text != want {
		t.Fatalf("errors:\n%s\nwant:\n%s", text, want)
	}
	// Noise on a server's stdout is dropped, not fatal.
	if text, isErr := run(map[string]any{"servers": []string{"noisy"}, "code": "print(await mcp_noisy.echo(message='through the noise'))"}); isErr || text != "through the noise" {
		t.Fatalf("noisy server: %q", text)
	}
	// The tour of the discovery helpers runs.
	text, isErr = run(map[string]any{"code": inspectSnippet(t)})
	if isErr || !strings.Contains(text, "configured: ('Stub Two', 'noisy', 'stub')") || !strings.Contains(text, "tool stub.echo: Echo the provided message") {
		t.Fatalf("inspection snippet: %q", text)
	}
	// A crashed server is restarted on next use; the call in flight fails clearly.
	text, _ = run(map[string]any{"code": "try:\n    await mcp_stub.crash()\nexcept MCPError as e:\n    print('crash:', e)\nprint(await mcp_stub.echo(message='back'))"})
	if !strings.HasPrefix(text, "crash: ") || !strings.HasSuffix(text, "\nback") {
		t.Fatalf("crash and restart: %q", text)
	}
}

// inspectSnippet is integration/testdata/inspect_servers.py, a tour of the
// discovery helpers, shared with the integration test that runs it on real
// servers.
func inspectSnippet(t *testing.T) string {
	t.Helper()
	code, err := os.ReadFile(filepath.Join("..", "integration", "testdata", "inspect_servers.py"))
	if err != nil {
		t.Fatal(err)
	}
	return string(code)
}
