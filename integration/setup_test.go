//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// claudeBin is the directory of the Claude Code CLI (claude) and the
// Node.js 22 it wants, installed by scripts/provision (integration/claude).
func claudeBin(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("claude", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "claude")); err != nil {
		t.Fatalf("the Claude Code CLI is not installed (run scripts/provision): %v", err)
	}
	return dir
}

// TestSetupClaudeCode runs `setup claude-code` with a temporary home and
// the real Claude Code CLI on PATH: setup writes the bridge's entry with
// `claude mcp add-json`, beside the server-everything entry already in
// ~/.claude.json; `claude mcp list` starts both and finds them connected;
// the TypeScript SDK's client starts exactly the command line setup
// wrote and runs Python; and the bridge, discovering servers from the
// same ~/.claude.json, proxies server-everything and not itself. No
// engine is written: the bridge detects its own, as setup did.
func TestSetupClaudeCode(t *testing.T) {
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		setupClaudeCodeFlow(t, binary(t), nil)
	})
}

// setupClaudeCodeFlow is TestSetupClaudeCode's user journey with the
// binary at bin (the test's build, or a release archive's), as acct
// (nil: the test's user, with a temporary home).
func setupClaudeCodeFlow(t *testing.T, bin string, acct *account) {
	t.Helper()
	{
		real, err := filepath.EvalSymlinks(bin)
		if err != nil {
			t.Fatal(err)
		}
		everything := filepath.Join(nodeDir(t), "node_modules", ".bin", "mcp-server-everything")
		before := map[string]any{"numStartups": 3, "mcpServers": map[string]any{
			"everything": map[string]any{"type": "stdio", "command": everything, "args": []string{}, "env": map[string]string{}},
		}}
		data, _ := json.Marshal(before)
		cli := claudeBin(t)
		claude := filepath.Join(cli, "claude")
		path := "PATH=" + cli + string(os.PathListSeparator) + os.Getenv("PATH")

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var cwd, claudeJSON string
		var mk func(env []string, name string, args ...string) *exec.Cmd
		if acct == nil {
			home := t.TempDir()
			cwd = t.TempDir()
			claudeJSON = filepath.Join(home, ".claude.json")
			if err := os.WriteFile(claudeJSON, data, 0o600); err != nil {
				t.Fatal(err)
			}
			base := append(envWithout("HOME", "PATH", "MCP_BRIDGE_RUNTIME"), "HOME="+home, path)
			mk = func(env []string, name string, args ...string) *exec.Cmd {
				cmd := exec.CommandContext(ctx, name, args...)
				cmd.Env, cmd.Dir = append(base, env...), cwd
				return cmd
			}
		} else {
			cwd = acct.mkdir(t, "work")
			claudeJSON = acct.writeFile(t, ".claude.json", data)
			mk = func(env []string, name string, args ...string) *exec.Cmd {
				cmd := acct.command(ctx, append([]string{path}, env...), name, args...)
				cmd.Dir = cwd
				return cmd
			}
		}
		command := func(name string, args ...string) (string, string) {
			t.Helper()
			cmd := mk(nil, name, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), args, err, stdout.String(), stderr.String())
			}
			return stdout.String(), stderr.String()
		}

		_, setupErr := command(bin, "setup", "claude-code")
		t.Logf("setup claude-code:\n%s", setupErr)
		for _, want := range []string{"engine: the bridge will use ", "Claude Code's other servers, which the bridge proxies: everything",
			"hint: -move-servers", `added "code-execution" to Claude Code's user configuration`, "claude mcp add-json --scope user code-execution"} {
			if !strings.Contains(setupErr, want) {
				t.Errorf("setup's stderr lacks %q:\n%s", want, setupErr)
			}
		}
		var after struct {
			NumStartups int                        `json:"numStartups"`
			MCPServers  map[string]json.RawMessage `json:"mcpServers"`
		}
		data, err = os.ReadFile(claudeJSON)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &after); err != nil {
			t.Fatalf("~/.claude.json after setup: %v\n%s", err, data)
		}
		var entry struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		json.Unmarshal(after.MCPServers["code-execution"], &entry)
		if entry.Type != "stdio" || entry.Command != real || !slices.Equal(entry.Args, []string{"run"}) || len(entry.Env) != 0 {
			t.Errorf("the entry claude wrote: %s; want stdio, %s run, no env (no engine forced)", after.MCPServers["code-execution"], real)
		}
		if after.NumStartups != 3 || after.MCPServers["everything"] == nil {
			t.Errorf("~/.claude.json lost its other settings or servers:\n%s", data)
		}

		list, _ := command(claude, "mcp", "list")
		for _, want := range []string{"code-execution: " + real + " run - ✔ Connected", "everything: " + everything + "  - ✔ Connected"} {
			if !strings.Contains(list, want) {
				t.Errorf("claude mcp list lacks %q:\n%s", want, list)
			}
		}

		calls := []map[string]any{
			{"code": "print(40 + 2)"},
			{"code": "from mcp import runtime\nprint(runtime.discovered_servers())"},
			{"servers": []string{"everything"}, "code": "print(await mcp_everything.get_sum(a=2, b=3))"},
		}
		in, _ := json.Marshal(calls)
		cmd := mk([]string{"MCP_BRIDGE_LOG_LEVEL=WARN"}, "node", filepath.Join(nodeDir(t), "configured.mjs"), claudeJSON, "code-execution")
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("configured.mjs: %v\nstderr:\n%s", err, stderr.String())
		}
		var res struct {
			Entry   map[string]any `json:"entry"`
			Tools   []string       `json:"tools"`
			Results []struct {
				Text    string `json:"text"`
				IsError bool   `json:"isError"`
			} `json:"results"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || len(res.Results) != len(calls) {
			t.Fatalf("configured.mjs printed %q (%v)\nstderr:\n%s", stdout.String(), err, stderr.String())
		}
		if res.Entry["command"] != real || !slices.Equal(res.Tools, []string{"run_python"}) {
			t.Errorf("the client started %v and listed %v", res.Entry, res.Tools)
		}
		r := res.Results
		if r[0].IsError || r[0].Text != "42" {
			t.Errorf("the first run_python: %q (isError %v)", r[0].Text, r[0].IsError)
		}
		if r[1].IsError || r[1].Text != "('everything',)" {
			t.Errorf("the servers the bridge discovered in ~/.claude.json: %q, want server-everything and not itself", r[1].Text)
		}
		if r[2].IsError || !strings.Contains(r[2].Text, "5") {
			t.Errorf("a call proxied to server-everything: %q (isError %v)", r[2].Text, r[2].IsError)
		}

		// -remove takes the bridge's entry out through claude again,
		// and only it.
		command(bin, "setup", "claude-code", "-remove")
		list, _ = command(claude, "mcp", "list")
		if strings.Contains(list, "code-execution") || !strings.Contains(list, "everything: ") {
			t.Errorf("claude mcp list after -remove:\n%s", list)
		}
	}
}
