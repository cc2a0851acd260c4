//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeDir holds the pinned npm peers installed by scripts/provision.
func nodeDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the npm peers are not installed (run scripts/provision): %v", err)
	}
	return dir
}

type tsResult struct {
	Tools       []map[string]any `json:"tools"`
	Resources   []map[string]any `json:"resources"`
	Manual      string           `json:"manual"`
	BadResource string           `json:"badResource"`
	Results     []struct {
		Text              string         `json:"text"`
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"results"`
}

// runTSClient drives the bridge binary with the TypeScript SDK's client.
func runTSClient(t *testing.T, home, runtime string, calls []map[string]any) tsResult {
	t.Helper()
	var res tsResult
	runNode(t, "client.mjs", []string{"HOME=" + home, "MCP_BRIDGE_RUNTIME=" + runtime, "MCP_BRIDGE_LOG_LEVEL=WARN"}, calls, &res)
	if len(res.Results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(res.Results), len(calls))
	}
	return res
}

// runNode runs the script of integration/node on the bridge binary with
// env added (later entries win), input as JSON on its stdin, and decodes
// its stdout, JSON, into out.
func runNode(t *testing.T, script string, env []string, input, out any) {
	t.Helper()
	in, _ := json.Marshal(input)
	cmd := exec.Command("node", filepath.Join(nodeDir(t), script), binary(t))
	cmd.Env = append(envWithout("HOME", "MCP_BRIDGE_RUNTIME"), env...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s output: %v\n%s", script, err, stdout.String())
	}
}

// npmHome writes ~/MCPs configs for server-everything, server-filesystem and
// server-memory into a fresh home directory.
func npmHome(t testing.TB) (home, shared string) {
	t.Helper()
	bin := filepath.Join(nodeDir(t), "node_modules", ".bin")
	home, shared = t.TempDir(), t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": filepath.Join(bin, "mcp-server-everything"), "description": "reference test server"},
		"filesystem": map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{shared}},
		"memory": map[string]any{"command": filepath.Join(bin, "mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(shared, "memory.jsonl")}},
		"self": map[string]any{"command": "mcp-server-code-execution-mode", "args": []string{"run"}},
	}}
	data, _ := json.Marshal(cfg)
	os.MkdirAll(filepath.Join(home, "MCPs"), 0o755)
	if err := os.WriteFile(filepath.Join(home, "MCPs", "servers.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return home, shared
}

func TestBridgeWithRealClientAndServers(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, shared := npmHome(t)
		os.WriteFile(filepath.Join(shared, "notes.txt"), []byte("hello from the host\n"), 0o644)
		calls := []map[string]any{
			{"code": "from mcp import runtime\nprint(runtime.discovered_servers())"},
			{"code": "from mcp import runtime\nfor h in await runtime.search_tool_docs(\"read a file's contents\", limit=3):\n    print(h['server'], h['tool'])"},
			{"servers": []string{"everything"}, "code": "s = await mcp_everything.get_sum(a=2, b=3)\nprint(s)\nprint(await mcp_everything.echo(message=f'sum is {s}'))"},
			{"servers": []string{"filesystem"}, "code": "print(await mcp_filesystem.read_text_file(path=" + pyString(filepath.Join(shared, "notes.txt")) + "))"},
			{"servers": []string{"memory"}, "code": "await mcp_memory.create_entities(entities=[{'name': 'bridge', 'entityType': 'program', 'observations': ['written in Go']}])\nprint(await mcp_memory.read_graph())"},
			{"code": "print(sorted(LOADED_MCP_SERVERS))"},
			{"code": "import inspect\nprint(inspect.signature(mcp_filesystem.read_text_file))\nfor call in (mcp_filesystem.read_text_file(path='/etc/passwd'), mcp_everything.get_sum(a=1)):\n    try:\n        await call\n    except MCPError as e:\n        print(type(e).__name__, e)"},
			{"code": "print('x')", "servers": []string{"self"}},
			{"code": "while True: pass", "timeout": 1},
			{"code": "print(s)"},
		}
		res := runTSClient(t, home, e.Name(), calls)
		if len(res.Tools) != 1 || res.Tools[0]["name"] != "run_python" || len(res.Resources) != 1 {
			t.Fatalf("tools %v resources %v", res.Tools, res.Resources)
		}
		if !strings.Contains(res.Manual, "search_tool_docs") || !strings.Contains(res.Manual, "servers") {
			t.Errorf("resources/read of %v: %q", res.Resources[0]["uri"], res.Manual)
		}
		if !strings.Contains(res.BadResource, "-32602") || !strings.Contains(res.BadResource, "nothing-here") {
			t.Errorf("reading an unknown resource: %q, want invalid params naming the URI", res.BadResource)
		}
		r := res.Results
		check := func(i int, ok bool) {
			t.Helper()
			if !ok {
				t.Errorf("call %d (%v): %q (isError %v)", i, calls[i]["code"], r[i].Text, r[i].IsError)
			}
		}
		check(0, r[0].Text == "('everything', 'filesystem', 'memory')")
		check(1, strings.HasPrefix(r[1].Text, "filesystem read_"))
		check(2, !r[2].IsError && strings.Contains(r[2].Text, "5") && strings.Contains(r[2].Text, "sum is"))
		check(3, !r[3].IsError && strings.Contains(r[3].Text, "hello from the host"))
		check(4, !r[4].IsError && strings.Contains(r[4].Text, "written in Go"))
		check(5, r[5].Text == "['everything', 'filesystem', 'memory']")
		check(6, !r[6].IsError && strings.HasPrefix(r[6].Text, "(*, path: 'str', head: 'float' = None, tail: 'float' = None) -> {\"content\": str}\n") &&
			strings.Contains(r[6].Text, "\nMCPError filesystem.read_text_file failed: ") && strings.Contains(r[6].Text, "Access denied") &&
			strings.Contains(r[6].Text, "\nMCPArgumentError get_sum() is missing required argument(s): b"))
		check(7, r[7].IsError && strings.Contains(r[7].Text, "not configured"))
		check(8, r[8].IsError && strings.Contains(r[8].Text, "status: timeout"))
		check(9, !r[9].IsError && strings.Contains(r[9].Text, "5"))
	})
}

// TestBridgeValidationErrors sends malformed arguments through the
// TypeScript client: each gets status validation_error with its reason, and
// the session lives on.
func TestBridgeValidationErrors(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		calls := []map[string]any{
			{"code": "kept = 41"},
			{"code": "   "},
			{"code": "print(1)", "servers": "everything"},
			{"code": "print(1)", "servers": []any{"everything", 3}},
			{"code": "print(1)", "timeout": 2.5},
			{"code": "print(1)", "timeout": "soon"},
			{"code": "print(1)", "servers": []string{"nonexistent"}},
			{"code": "print(kept + 1)"},
		}
		reasons := []string{"", "Missing 'code'", "servers", "servers", "timeout", "timeout", "nonexistent", ""}
		res := runTSClient(t, home, e.Name(), calls)
		for i, r := range res.Results {
			if reasons[i] == "" {
				continue
			}
			sc := r.StructuredContent
			if !r.IsError || sc["status"] != "validation_error" || !strings.Contains(r.Text, reasons[i]) {
				t.Errorf("call %d %v: %q isError=%v structured=%v, want validation_error naming %q", i, calls[i], r.Text, r.IsError, sc, reasons[i])
			}
		}
		if last := res.Results[len(calls)-1]; last.IsError || last.Text != "42" {
			t.Errorf("the session after the validation errors: %q", last.Text)
		}
	})
}

// TestInspectServersTour runs testdata/inspect_servers.py, a tour of the
// discovery helpers as code written for the original calls them, against
// server-everything.
func TestInspectServersTour(t *testing.T) {
	t.Parallel()
	code, err := os.ReadFile(filepath.Join("testdata", "inspect_servers.py"))
	if err != nil {
		t.Fatal(err)
	}
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		r := runTSClient(t, home, e.Name(), []map[string]any{{"code": string(code), "servers": []string{"everything"}}}).Results[0]
		if r.IsError {
			t.Fatalf("the tour failed:\n%s", r.Text)
		}
		for _, want := range []string{
			"configured: ('everything', 'filesystem', 'memory')",
			"loaded (cached): ('everything',)",
			"metadata: ({'name': 'everything', 'alias': 'everything', 'description': 'reference test server', 'cwd': '', 'tools': [{'name': 'echo', 'alias': 'echo'",
			"loaded (asked): ('everything',)",
			"tool everything.get_sum: ",
			"brief docs: [{'server': 'everything'",
			"tool list (cached): ",
			"full doc: {'server': 'everything', 'serverAlias': 'everything', 'tool': 'echo', 'toolAlias': 'echo'",
			"'inputSchema': {",
			"summary: Python sandbox ",
			"brief docs (sync): [{",
			"hits (sync): [",
		} {
			if !strings.Contains(r.Text, want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		if t.Failed() {
			t.Logf("output:\n%s", r.Text)
		}
	})
}

// TestMemoryAndSavedToolsSurviveRestart saves a memory and a tool through one
// bridge process and uses them from the next one on the same state directory.
func TestMemoryAndSavedToolsSurviveRestart(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		first := runTSClient(t, home, e.Name(), []map[string]any{
			{"code": "save_memory('project', {'name': 'bridge', 'langs': ['go', 'python']}, metadata={'tag': 't'})\n" +
				"def double(x):\n    \"Twice x.\"\n    return 2 * x\nsave_tool(double)\nprint(list_memories())"},
		}).Results[0]
		if first.IsError || !strings.Contains(first.Text, "project") {
			t.Fatalf("saving: %q", first.Text)
		}
		second := runTSClient(t, home, e.Name(), []map[string]any{
			{"code": "print(load_memory('project'))\nprint(double(21))\nprint(memory_exists('project'), memory_exists('other'))\nprint(get_memory_info('project')['metadata'])"},
		}).Results[0]
		want := "{'name': 'bridge', 'langs': ['go', 'python']}\n42\nTrue False\n{'tag': 't'}"
		if second.IsError || second.Text != want {
			t.Fatalf("after a restart: %q, want %q", second.Text, want)
		}
		if _, err := os.Stat(filepath.Join(home, "MCPs", "memory")); err != nil {
			t.Errorf("the memories are not under the state directory: %v", err)
		}
	})
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
