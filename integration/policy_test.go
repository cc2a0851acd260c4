//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsPolicyResult is what integration/node/policy.mjs prints.
type tsPolicyResult struct {
	Results []struct {
		Text    string `json:"text"`
		IsError bool   `json:"isError"`
	} `json:"results"`
	Questions []string `json:"questions"`
}

// everythingPolicy denies get-env (and every trigger-* tool), asks before
// get-sum, forbids loading memory and allows 4 proxied calls per call.
const everythingPolicy = `{
  "servers": {
    "everything": {"deny": ["get-env", "trigger-*"], "confirm": ["get-sum"]},
    "memory": {"load": false}
  },
  "max_tool_calls": 4,
  "redact_keys": ["message"]
}`

// TestPolicyWithTypeScriptClient runs the tool policy with the official
// TypeScript SDK client, with and without elicitation, against
// server-everything on one engine: denied tools, a confirmed call
// accepted and one declined, the bound of calls per run_python call, a
// server that may not be loaded, and the audit records of all of it.
func TestPolicyWithTypeScriptClient(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		// The default place of the policy: the state directory.
		writeFile(t, filepath.Join(home, "MCPs", "policy.json"), everythingPolicy)
		auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
		env := []string{"HOME=" + home, "MCP_BRIDGE_RUNTIME=" + e.Name(), "MCP_BRIDGE_LOG_LEVEL=WARN", "MCP_BRIDGE_AUDIT_LOG=" + auditPath}
		calls := []map[string]any{
			{"code": "from mcp import runtime\nprint(runtime.discovered_servers())"},
			{"servers": []string{"memory"}, "code": "print(1)"},
			{"servers": []string{"everything"}, "code": `from mcp import runtime
names = [t['name'] for t in runtime.list_tools_sync('everything')]
print('get-env' in names, any(n.startswith('trigger-') for n in names), 'echo' in names)
print([h['tool'] for h in runtime.search_tool_docs_sync('environment variables', limit=20) if h['tool'] == 'get-env'])
for route in (lambda: mcp_everything.get_env(), lambda: runtime.call_tool('everything', 'get-env', {})):
    try:
        await route()
    except MCPError as e:
        print(e)`},
			{"code": "print(await mcp_everything.get_sum(a=40, b=2))\ntry:\n    await mcp_everything.get_sum(a=1, b=1)\nexcept MCPError as e:\n    print(e)"},
			{"code": "for i in range(5):\n    try:\n        await mcp_everything.echo(message=f'secret {i}')\n        print('ok', i)\n    except MCPError as e:\n        print(e)"},
		}
		var res tsPolicyResult
		runNode(t, "policy.mjs", append(env, "POLICY_ELICIT=accept-if:\"a\" = 40"), calls, &res)
		r := res.Results
		want := func(i int, cond bool) {
			t.Helper()
			if !cond {
				t.Errorf("call %d: %q", i, r[i].Text)
			}
		}
		want(0, r[0].Text == "('everything', 'filesystem')")
		want(1, r[1].IsError && strings.Contains(r[1].Text, `the server 'memory' may not be loaded: servers["memory"].load is false`))
		denied := `refused by the tool policy: everything.get-env is denied: servers["everything"].deny "get-env" (in policy.json)`
		want(2, strings.HasPrefix(r[2].Text, "False False True\n[]\n") && strings.Count(r[2].Text, denied) == 2)
		want(3, strings.HasPrefix(r[3].Text, "The sum of 40 and 2 is 42.\nrefused by the tool policy: everything.get-sum was declined by the user (decline)"))
		want(4, strings.HasPrefix(r[4].Text, "ok 0\nok 1\nok 2\nok 3\nrefused by the tool policy: more than 4 proxied tool calls in one run_python call"))
		if len(res.Questions) != 2 || !strings.Contains(res.Questions[0], `the tool "get-sum" of the MCP server "everything"`) {
			t.Errorf("questions: %q", res.Questions)
		}

		// Without elicitation: a confirm tool is refused, saying why.
		var plain tsPolicyResult
		runNode(t, "policy.mjs", append(env, "POLICY_ELICIT=none"), []map[string]any{
			{"servers": []string{"everything"}, "code": "try:\n    await mcp_everything.get_sum(a=1, b=2)\nexcept MCPError as e:\n    print(e)"},
		}, &plain)
		if text := plain.Results[0].Text; !strings.Contains(text, "this MCP client cannot be asked (it has no elicitation capability)") {
			t.Errorf("confirm without elicitation: %q", text)
		}

		outcomes := map[string]int{}
		runs := 0
		for _, rec := range readAudit(t, auditPath) {
			switch rec["event"] {
			case "run_python":
				runs++
			case "tool_call":
				outcomes[rec["tool"].(string)+" "+rec["outcome"].(string)]++
				if rec["tool"] == "echo" && !strings.Contains(mustJSON(rec["arguments"]), "[redacted]") {
					t.Errorf("echo's message not redacted: %v", rec["arguments"])
				}
			}
		}
		// get-env is refused by the bridge by both routes, the proxy
		// object and runtime.call_tool: a denied record of each.
		wantOutcomes := map[string]int{"get-env denied": 2, "get-sum accepted": 1, "get-sum ok": 1, "get-sum declined": 2, "echo ok": 4, "echo denied": 1}
		if runs != 6 {
			t.Errorf("%d run_python records, want 6", runs)
		}
		for k, n := range wantOutcomes {
			if outcomes[k] != n {
				t.Errorf("audit: %d %q, want %d (all: %v)", outcomes[k], k, n, outcomes)
			}
		}
	})
}

// readAudit reads the JSON lines of an audit log.
func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// TestPolicyConfirmOverHTTP serves two sessions over HTTP, each a go-sdk
// client that can be asked (protocol 2025-11-25): a confirm tool called
// in one session asks that session's user only, on its own call.
func TestPolicyConfirmOverHTTP(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		writeFile(t, filepath.Join(home, "MCPs", "policy.json"), everythingPolicy)
		b := startHTTPBridge(t, e, httpOpts{env: []string{"HOME=" + home, "MCP_BRIDGE_POOL_SIZE=0"}})
		var mu sync.Mutex
		asked := map[string][]string{}
		dial := func(name string) *mcp.ClientSession {
			t.Helper()
			copts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked[name] = append(asked[name], req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept"}, nil
			}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tr := &mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: b.httpClient(b.token)}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-" + name, Version: "1"}, copts).
				Connect(ctx, tr, sessions2025)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs
		}
		a, other := dial("a"), dial("b")
		if text, isErr := runPython(t, other, map[string]any{"code": "print('b is here')"}); isErr || text != "b is here" {
			t.Fatalf("session b: %q", text)
		}
		text, isErr := runPython(t, a, map[string]any{"servers": []string{"everything"}, "code": "print(await mcp_everything.get_sum(a=20, b=22))"})
		if isErr || text != "The sum of 20 and 22 is 42." {
			t.Fatalf("a confirmed call over HTTP: %q", text)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asked["a"]) != 1 || len(asked["b"]) != 0 || !strings.Contains(asked["a"][0], `"a" = 20`) {
			t.Fatalf("questions: %q", asked)
		}
	})
}
