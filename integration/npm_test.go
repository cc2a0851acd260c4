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
func nodeDir(t *testing.T) string {
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
	Tools     []map[string]any `json:"tools"`
	Resources []map[string]any `json:"resources"`
	Results   []struct {
		Text              string         `json:"text"`
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"results"`
}

// runTSClient drives the bridge binary with the TypeScript SDK's client.
func runTSClient(t *testing.T, home, runtime string, calls []map[string]any) tsResult {
	t.Helper()
	dir := nodeDir(t)
	in, _ := json.Marshal(calls)
	cmd := exec.Command("node", filepath.Join(dir, "client.mjs"), binary(t))
	cmd.Env = append(envWithout("HOME", "MCP_BRIDGE_RUNTIME"), "HOME="+home, "MCP_BRIDGE_RUNTIME="+runtime, "MCP_BRIDGE_LOG_LEVEL=WARN")
	cmd.Dir = t.TempDir()
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\nstderr:\n%s", err, errb.String())
	}
	var res tsResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("client output: %v\n%s", err, out.String())
	}
	if len(res.Results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(res.Results), len(calls))
	}
	return res
}

// npmHome writes ~/MCPs configs for server-everything, server-filesystem and
// server-memory into a fresh home directory.
func npmHome(t *testing.T) (home, shared string) {
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
	forEachEngine(t, func(t *testing.T, e testEngine) {
		home, shared := npmHome(t)
		os.WriteFile(filepath.Join(shared, "notes.txt"), []byte("hello from the host\n"), 0o644)
		calls := []map[string]any{
			{"code": "from mcp import runtime\nprint(runtime.discovered_servers())"},
			{"code": "from mcp import runtime\nfor h in await runtime.search_tool_docs(\"read a file's contents\", limit=3):\n    print(h['server'], h['tool'])"},
			{"servers": []string{"everything"}, "code": "s = await mcp_everything.get_sum(a=2, b=3)\nprint(s)\nprint(await mcp_everything.echo(message=f'sum is {s}'))"},
			{"servers": []string{"filesystem"}, "code": "print(await mcp_filesystem.read_text_file(path=" + pyString(filepath.Join(shared, "notes.txt")) + "))"},
			{"servers": []string{"memory"}, "code": "await mcp_memory.create_entities(entities=[{'name': 'bridge', 'entityType': 'program', 'observations': ['written in Go']}])\nprint(await mcp_memory.read_graph())"},
			{"code": "print(sorted(LOADED_MCP_SERVERS))"},
			{"code": "print('x')", "servers": []string{"self"}},
			{"code": "while True: pass", "timeout": 1},
			{"code": "print(s)"},
		}
		res := runTSClient(t, home, e.Name(), calls)
		if len(res.Tools) != 1 || res.Tools[0]["name"] != "run_python" || len(res.Resources) != 1 {
			t.Fatalf("tools %v resources %v", res.Tools, res.Resources)
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
		check(6, r[6].IsError && strings.Contains(r[6].Text, "not configured"))
		check(7, r[7].IsError && strings.Contains(r[7].Text, "status: timeout"))
		check(8, !r[8].IsError && strings.Contains(r[8].Text, "5"))
	})
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
