package mcpbridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// TestSandboxSignatures runs the sandbox API in the host's python3 with the
// parameters servers.ParamsOf decodes, as the sandbox receives them:
// signatures, argument checks, names that cannot be parameters, a parameter
// called "arguments", and a schema the bridge could not read. Then every
// seed and every input of the committed corpus of FuzzToolParams (in
// mcpbridge/servers) must install.
func TestSandboxSignatures(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this host")
	}
	tool := func(alias, schema string) map[string]any {
		var s any
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		params, _ := servers.ParamsOf(s)
		if params == nil {
			params = []servers.Param{}
		}
		return map[string]any{"name": alias, "alias": alias, "description": "", "input_schema": s, "params": params}
	}
	seeds := schemaSeeds(t)
	tools := []map[string]any{
		tool("read_text_file", seeds[0]),
		tool("echo", seeds[2]),
		tool("names", seeds[10]),
		tool("args", seeds[11]),
		tool("unreadable", `{"properties":[1]}`),
	}
	script := `
import asyncio, inspect
s = mcp_s
for name in ("read_text_file", "echo", "names", "args", "unreadable"):
    print(name, inspect.signature(getattr(s, name)))
calls = [
    lambda: s.read_text_file(path="/x", head=3),
    lambda: s.echo(arguments={"message": "hi"}),
    lambda: s.echo(),
    lambda: s.echo(message="a", nope=1),
    lambda: s.echo("positional"),
    lambda: s.echo(arguments=7),
    lambda: s.names(match="m", **{"get-sum": 1, "class": "c", "2fa": None, "ñandú": "n"}),
    lambda: s.names(match="m"),
    lambda: s.args(arguments={"x": 1}, kwargs="k"),
    lambda: s.unreadable(anything=1),
]
for c in calls:
    try:
        print(asyncio.run(c()))
    except MCPError as e:
        print(type(e).__name__, e)
`
	want := `read_text_file (*, path: 'str', head: 'float' = None, tail: 'float' = None)
echo (*, message: 'str')
names (*, match: 'str', _: 'int' = None, self: 'str' = None)
args (*, arguments: 'dict', args: 'list' = None, kwargs: 'str' = None)
unreadable ()
{'path': '/x', 'head': 3}
{'message': 'hi'}
MCPArgumentError echo() is missing required argument(s): message
MCPArgumentError echo() got unknown argument(s) nope; its parameters are: message
MCPArgumentError echo() takes keyword arguments only: message
MCPArgumentError echo() takes arguments= as a dict
{'match': 'm', 'get-sum': 1, 'class': 'c', 'ñandú': 'n'}
MCPArgumentError names() is missing required argument(s): class, get-sum
{'arguments': {'x': 1}, 'kwargs': 'k'}
{'anything': 1}
`
	if got := runSandboxAPI(t, python, tools, script); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}

	// Every seed and corpus input installs: its signature is valid Python.
	inputs := append([]string{}, seeds...)
	inputs = append(inputs, corpusInputs(t, "FuzzToolParams")...)
	tools = nil
	for i, in := range inputs {
		var s any
		if json.Unmarshal([]byte(in), &s) != nil {
			continue
		}
		tools = append(tools, tool("t"+strconv.Itoa(i), in))
	}
	got := runSandboxAPI(t, python, tools, "import inspect\nprint(sum(1 for t in mcp_s._meta['tools'] if inspect.signature(getattr(mcp_s, t['alias'])) is not None))")
	if got != strconv.Itoa(len(tools))+"\n" {
		t.Fatalf("installed %q of %d tools", got, len(tools))
	}
}

// sandboxAPIFile is the sandbox API's source, which the runtime ships as
// the module mcp_sandbox_api (entrypoint's sandboxAPIModule).
var sandboxAPIFile = filepath.Join("..", "entrypoint", "sandbox_api", "sandbox_api.py")

// runSandboxAPI installs tools as server "s" in a python3 that runs the
// sandbox API's install code as a new interpreter does (the API
// importable as mcp_sandbox_api, as the runtime ships it), with an RPC
// stand-in that answers a call with the arguments it was given, runs
// script and returns its output.
func runSandboxAPI(t *testing.T, python string, tools []map[string]any, script string) string {
	t.Helper()
	state, err := json.Marshal(map[string]any{"servers": []any{map[string]any{"name": "s", "alias": "s", "tools": tools}}})
	if err != nil {
		t.Fatal(err)
	}
	install := filepath.Join(t.TempDir(), "install.py")
	if err := os.WriteFile(install, []byte(installCode), 0o600); err != nil {
		t.Fatal(err)
	}
	harness := `
import json, sys, types
rt = types.ModuleType("mcp_sandbox_runtime")
class RPCError(Exception):
    pass
async def rpc(payload):
    return {"result": {"structuredContent": payload.get("arguments")}}
rt.RPCError, rt.rpc, rt.rpc_sync = RPCError, rpc, lambda payload: {}
sys.modules["mcp_sandbox_runtime"] = rt
api = types.ModuleType("mcp_sandbox_api")
sys.modules["mcp_sandbox_api"] = api
exec(compile(open(sys.argv[3], encoding="utf-8").read(), "<mcp-sandbox-api>", "exec"), api.__dict__)
g = {"__name__": "__main__"}
exec(compile(open(sys.argv[1]).read(), "<init>", "exec"), g)
g["_mcp_bridge_configure"](json.loads(sys.stdin.read()))
exec(compile(sys.argv[2], "<script>", "exec"), g)
`
	cmd := exec.Command(python, "-c", harness, install, script, sandboxAPIFile)
	cmd.Stdin = bytes.NewReader(state)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// schemaSeeds returns the seeds of FuzzToolParams, the input schemas of
// servers/testdata/schema_seeds.txt (one a line; # starts a comment).
func schemaSeeds(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("servers", "testdata", "schema_seeds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			seeds = append(seeds, line)
		}
	}
	return seeds
}

// corpusInputs returns the []byte inputs of the committed corpus of a fuzz
// target of mcpbridge/servers (servers/testdata/fuzz/<target>), as strings.
func corpusInputs(t *testing.T, target string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("servers", "testdata", "fuzz", target, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if arg, ok := strings.CutPrefix(line, "[]byte("); ok && strings.HasSuffix(arg, ")") {
				s, err := strconv.Unquote(strings.TrimSuffix(arg, ")"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// TestSandboxKnowsPolicyRefusals checks that the sandbox API tells a
// denied tool's refusal by the text the bridge's refusals begin with.
func TestSandboxKnowsPolicyRefusals(t *testing.T) {
	want := "POLICY_REFUSAL = " + strconv.Quote(ErrPolicy.Error()) + "\n"
	api, err := os.ReadFile(sandboxAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(api), want) {
		t.Fatalf("sandbox_api.py has no line %q", want)
	}
}
