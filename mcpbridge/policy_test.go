package mcpbridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

func TestParsePolicy(t *testing.T) {
	for _, tt := range []struct {
		name, data, wantErr string
	}{
		{"policy.json", `{}`, ""},
		{"policy.json", `{"servers": {"github": {"deny": ["delete_*"], "confirm": ["create_*"]}, "*": {"allow": ["*"]}}, "max_tool_calls": 5}`, ""},
		{"policy.toml", "max_tool_calls = 3\n[servers.github]\ndeny = [\"delete_*\"]\n", ""},
		{"policy.json", ``, "it is empty"},
		{"policy.json", " \n\t", "it is empty"},
		{"policy.json", `{"servers": {"github": {"dney": ["x"]}}}`, `unknown field "dney"`},
		{"policy.json", `{"sevrers": {}}`, `unknown field "sevrers"`},
		{"policy.json", "{\"servers\": {\"a\": {\"deny\": [\"\xff\"]}}}", "not valid UTF-8"},
		{"policy.json", "{\n  \"servers\": {,}\n}", "line 2, column"},
		{"policy.json", `{"servers": {"a": {"deny": ["[x"]}}}`, `servers["a"].deny: glob "[x": syntax error in pattern`},
		{"policy.json", `{"servers": {"[": {}}}`, `servers key: glob "["`},
		{"policy.json", `{"servers": {"a": {"allow": [""]}}}`, "want 1 to 256 bytes"},
		{"policy.json", `{"servers": {"a": null}}`, `servers["a"] is null`},
		{"policy.json", `{"max_tool_calls": -1}`, "max_tool_calls is -1"},
		{"policy.json", `{"confirm_without_elicitation": "maybe"}`, `confirm_without_elicitation is "maybe"`},
		{"policy.json", `{} {}`, "more than one JSON value"},
		{"policy.json", `[]`, "cannot unmarshal array"},
		{"policy.toml", "servers = 1\n", "cannot unmarshal number"},
		{"policy.json", `{"servers": {"a": {"deny": ["` + strings.Repeat("x", 257) + `"]}}}`, "want 1 to 256 bytes"},
		{"policy.json", `{"redact_keys": ["` + strings.Repeat(`x", "`, 1001) + `x"]}`, "at most 1000"},
		{"policy.json", strings.Repeat(" ", maxPolicyBytes) + "{}", "at most 1048576 are read"},
	} {
		_, err := parsePolicy([]byte(tt.data), tt.name)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("parsePolicy(%s, %.60q): %v, want %q", tt.name, tt.data, err, tt.wantErr)
		}
	}
}

func TestPolicyDecide(t *testing.T) {
	p, err := parsePolicy([]byte(`{"servers": {
		"github": {"deny": ["delete_*"], "confirm": ["create_*", "merge_*"]},
		"git*": {"allow": ["status"]},
		"scratch-*": {"load": false},
		"files": {"allow": ["read_*", "list_*"], "deny": ["read_secret*"]},
		"*": {"allow": ["*"]}
	}}`), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		server, tool string
		kind         int
		rule         string
	}{
		{"github", "delete_repo", verdictDeny, `servers["github"].deny "delete_*"`},
		{"github", "create_issue", verdictConfirm, `servers["github"].confirm "create_*"`},
		{"github", "merge_pr", verdictConfirm, `servers["github"].confirm "merge_*"`},
		{"github", "list_issues", verdictAllow, ""},
		// The exact entry wins over the glob "git*", which wins over "*".
		{"gitlab", "status", verdictAllow, ""},
		{"gitlab", "push", verdictDeny, `servers["git*"].allow lists no glob it matches`},
		{"scratch-1", "anything", verdictDeny, `servers["scratch-*"].load is false`},
		{"files", "read_file", verdictAllow, ""},
		{"files", "read_secrets", verdictDeny, `servers["files"].deny "read_secret*"`},
		{"files", "write_file", verdictDeny, `servers["files"].allow lists no glob it matches`},
		{"other", "x", verdictAllow, ""},
	} {
		v := p.decide(tt.server, tt.tool)
		if v.kind != tt.kind || v.rule != tt.rule {
			t.Errorf("decide(%s, %s) = %+v, want %d %q", tt.server, tt.tool, v, tt.kind, tt.rule)
		}
	}
	if ok, _ := p.mayLoad("scratch-9"); ok {
		t.Error("scratch-9 may be loaded")
	}
	var none *policy
	if v := none.decide("a", "b"); v.kind != verdictAllow || none.maxToolCalls() != defaultMaxToolCalls || none.confirmWithoutElicitation() {
		t.Error("no policy is not allow-all with the default bound")
	}
	tools := []*mcp.Tool{{Name: "read_file"}, {Name: "read_secret"}, {Name: "write_file"}}
	if got := p.visible("files", tools); len(got) != 1 || got[0].Name != "read_file" {
		t.Errorf("visible: %v", got)
	}
	// A pathological glob is matched in bounded time.
	hard := &policy{Servers: map[string]*serverRule{"s": {key: "s", Deny: []string{strings.Repeat("*a", 100) + "b"}}}}
	began := time.Now()
	hard.decide("s", strings.Repeat("a", 4000))
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a pathological glob took %v", took)
	}
}

func TestPolicyRedacts(t *testing.T) {
	p := &policy{RedactKeys: []string{"session_*"}}
	args := map[string]any{"title": "x", "API_KEY": "k", "nested": map[string]any{"password": "p", "list": []any{map[string]any{"github_token": "t"}}}, "session_id": "s"}
	data, _ := json.Marshal(auditArguments(args, p))
	got := string(data)
	for _, secret := range []string{`"k"`, `"p"`, `"t"`, `"s"`} {
		if strings.Contains(got, secret) {
			t.Errorf("%s shown in %s", secret, got)
		}
	}
	if !strings.Contains(got, `"title":"x"`) || strings.Count(got, "[redacted]") != 4 {
		t.Errorf("redacted: %s", got)
	}
	big := map[string]any{"data": strings.Repeat("y", 20000)}
	if m, ok := auditArguments(big, nil).(map[string]any); !ok || m["bytes"] == nil || len(m["truncated"].(string)) != maxAuditArgs {
		t.Errorf("large arguments not truncated: %T", auditArguments(big, nil))
	}
}

func TestPolicyFileReloadsAndFailsClosed(t *testing.T) {
	dir := t.TempDir()
	f := newPolicyFile("", dir, testLog(t))
	if p, err := f.Current(); p != nil || err != nil {
		t.Fatalf("no default file: %v %v", p, err)
	}
	path := filepath.Join(dir, "policy.json")
	write(t, path, `{"servers": {"a": {"deny": ["x"]}}}`)
	p, err := f.Current()
	if err != nil || p.decide("a", "x").kind != verdictDeny {
		t.Fatalf("after writing: %v %v", p, err)
	}
	write(t, path, `{"servers": {"a": {"deny": [}}}`)
	if _, err := f.Current(); err == nil || !strings.Contains(err.Error(), "is invalid, so every proxied tool call is refused") {
		t.Fatalf("broken file: %v", err)
	}
	write(t, path, `{"servers": {"a": {"deny": ["y"]}}}`)
	if p, err := f.Current(); err != nil || p.decide("a", "x").kind != verdictAllow {
		t.Fatalf("fixed file: %v %v", p, err)
	}
	explicit := newPolicyFile(filepath.Join(dir, "missing.json"), dir, testLog(t))
	if _, err := explicit.Current(); err == nil || !strings.Contains(err.Error(), "does not exist (MCP_BRIDGE_POLICY names it)") {
		t.Fatalf("missing explicit file: %v", err)
	}
	adir := newPolicyFile(dir, dir, testLog(t))
	if _, err := adir.Current(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory as the policy: %v", err)
	}
}

func testLog(t *testing.T) *slog.Logger { return slog.New(slog.DiscardHandler) }

// policyBridge connects a client (with elicitation answered by answer
// when it is set) to a bridge on the stub servers under the policy text,
// with an audit log; it returns the client and the audit log's path.
func policyBridge(t *testing.T, text string, answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, string) {
	return policyBridgeOn(t, text, answer, elicitMaxProtocol)
}

// policyBridgeOn is policyBridge with the client on protocol version.
func policyBridgeOn(t *testing.T, text string, answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), version string) (*mcp.ClientSession, string) {
	t.Helper()
	dir := t.TempDir()
	policyPath := filepath.Join(dir, "policy.json")
	write(t, policyPath, text)
	auditPath := filepath.Join(dir, "audit.jsonl")
	audit, err := OpenAudit(auditPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { audit.Close() })
	var copts *mcp.ClientOptions
	if answer != nil {
		copts = &mcp.ClientOptions{ElicitationHandler: answer}
	}
	opts := Options{Registry: stubRegistry(t), PolicyFile: policyPath, Audit: audit}
	br := New(enginetest.Local{T: t}, &opts)
	t.Cleanup(func() { br.Close() })
	st, ct := mcp.NewInMemoryTransports()
	if _, err := br.Server().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).
		Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, auditPath
}

// auditRecords reads the audit log at path.
func auditRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

const stubPolicy = `{"servers": {"stub": {"deny": ["crash"], "confirm": ["get-sum"]}, "Stub Two": {"load": false}}, "max_tool_calls": 3}`

func TestPolicyOnProxiedCalls(t *testing.T) {
	var asked []string
	cs, auditPath := policyBridge(t, stubPolicy, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if strings.Contains(req.Params.Message, `"a": 40`) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	run := func(args map[string]any) string {
		t.Helper()
		_, text, _ := call(t, cs, args)
		return text
	}
	if text := run(map[string]any{"code": "from mcp import runtime\nprint(runtime.discovered_servers())"}); text != "('noisy', 'stub')" {
		t.Fatalf("discovered under the policy: %q", text)
	}
	if text := run(map[string]any{"servers": []string{"Stub Two"}, "code": "print(1)"}); !strings.Contains(text, `the server 'Stub Two' may not be loaded: servers["Stub Two"].load is false`) {
		t.Fatalf("loading a forbidden server: %q", text)
	}
	text := run(map[string]any{"servers": []string{"stub"}, "code": `from mcp import runtime
print(hasattr(mcp_stub, 'crash'), hasattr(mcp_stub, 'echo'))
print([t['name'] for t in runtime.list_tools_sync('stub')])
for route in (lambda: runtime.call_tool('stub', 'crash', {}), lambda: getattr(mcp_servers['stub'], 'crash')()):
    try:
        await route()
    except MCPError as e:
        print('MCPError', e)
print([h['tool'] for h in runtime.search_tool_docs_sync('exit the server process', limit=10) if h['server'] == 'stub'])`})
	wantDenied := `MCPError refused by the tool policy: stub.crash is denied: servers["stub"].deny "crash" (in `
	if !strings.HasPrefix(text, "False True\n") || strings.Contains(text, "'crash'") || strings.Count(text, wantDenied) != 2 {
		t.Fatalf("a denied tool:\n%s", text)
	}
	text = run(map[string]any{"code": `print(await mcp_stub.get_sum(a=40, b=2))
try:
    await mcp_stub.get_sum(a=1, b=1)
except MCPError as e:
    print('MCPError', e)`})
	if !strings.HasPrefix(text, "{'sum': 42}\nMCPError refused by the tool policy: stub.get-sum was declined by the user (decline)") {
		t.Fatalf("confirm: %q", text)
	}
	if len(asked) != 2 || !strings.Contains(asked[0], `the tool "get-sum" of the MCP server "stub"`) {
		t.Fatalf("questions: %q", asked)
	}
	text = run(map[string]any{"code": "for i in range(4):\n    try:\n        await mcp_stub.echo(message=str(i))\n        print('ok', i)\n    except MCPError as e:\n        print(e)"})
	if text != "ok 0\nok 1\nok 2\nrefused by the tool policy: more than 3 proxied tool calls in one run_python call (max_tool_calls (in "+filepath.Dir(auditPath)+"/policy.json))" {
		t.Fatalf("quota: %q", text)
	}
	if text := run(map[string]any{"code": "print(await mcp_stub.echo(message='next call'))"}); text != "next call" {
		t.Fatalf("the bound is per call: %q", text)
	}

	outcomes := map[string]int{}
	runs := 0
	for _, rec := range auditRecords(t, auditPath) {
		switch rec["event"] {
		case "run_python":
			runs++
			if len(rec["code_sha256"].(string)) != 64 || rec["session"] == nil || rec["status"] == nil {
				t.Errorf("run_python record %v", rec)
			}
		case "tool_call":
			outcomes[rec["tool"].(string)+" "+rec["outcome"].(string)]++
		default:
			t.Errorf("record %v", rec)
		}
	}
	// The proxy's refusal of a denied name is raised in the sandbox, with
	// no call of the bridge: one record, of runtime.call_tool's.
	want := map[string]int{"crash denied": 1, "get-sum accepted": 1, "get-sum ok": 1, "get-sum declined": 1, "echo ok": 4, "echo denied": 1}
	if runs != 6 || len(outcomes) != len(want) {
		t.Fatalf("%d run_python records, tool calls %v; want 6, %v", runs, outcomes, want)
	}
	for k, n := range want {
		if outcomes[k] != n {
			t.Errorf("audit: %d %q, want %d (all: %v)", outcomes[k], k, n, outcomes)
		}
	}
}

func TestPolicyConfirmWithoutElicitation(t *testing.T) {
	cs, _ := policyBridge(t, stubPolicy, nil)
	_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "try:\n    await mcp_stub.get_sum(a=1, b=1)\nexcept MCPError as e:\n    print(e)"})
	if !strings.Contains(text, "this MCP client cannot be asked (it has no elicitation capability)") {
		t.Fatalf("confirm without elicitation: %q", text)
	}
	cs, _ = policyBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"]}}, "confirm_without_elicitation": "allow"}`, nil)
	if _, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "print(await mcp_stub.get_sum(a=1, b=1))"}); text != "{'sum': 2}" {
		t.Fatalf("confirm_without_elicitation allow: %q", text)
	}
}

func TestPolicyElicitationNeverAnswered(t *testing.T) {
	cs, _ := policyBridge(t, stubPolicy, func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done() // never answers; the bridge gives up with the call
		return nil, ctx.Err()
	})
	began := time.Now()
	res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "timeout": 2, "code": "x = 1\nprint(await mcp_stub.get_sum(a=1, b=1))"})
	if !res.IsError || !strings.Contains(text, "timeout") || time.Since(began) > 30*time.Second {
		t.Fatalf("an unanswered question: %q after %v", text, time.Since(began))
	}
}

func TestPolicyBrokenFileRefusesEverything(t *testing.T) {
	cs, _ := policyBridge(t, `{"servers": {`, nil)
	_, text, _ := call(t, cs, map[string]any{"code": "from mcp import runtime\ntry:\n    runtime.discovered_servers()\nexcept MCPError as e:\n    print(e)"})
	if !strings.Contains(text, "is invalid, so every proxied tool call is refused") {
		t.Fatalf("discovery under a broken policy: %q", text)
	}
	_, text, _ = call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "print(1)"})
	if !strings.Contains(text, "is invalid, so every proxied tool call is refused") {
		t.Fatalf("loading under a broken policy: %q", text)
	}
	if _, text, _ := call(t, cs, map[string]any{"code": "print(6*7)"}); text != "42" {
		t.Fatalf("plain Python under a broken policy: %q", text)
	}
}

func TestPolicyMalformedAnswers(t *testing.T) {
	for _, answer := range []*mcp.ElicitResult{{Action: "maybe"}, {Action: ""}, {Action: "accept", Content: map[string]any{"unasked": 1}}} {
		cs, _ := policyBridge(t, stubPolicy, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer, nil })
		_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "try:\n    print(await mcp_stub.get_sum(a=1, b=1))\nexcept MCPError as e:\n    print(e)"})
		if answer.Action == "accept" {
			// Content the bridge did not ask for is ignored: accept is accept.
			if text != "{'sum': 2}" {
				t.Errorf("accept with content: %q", text)
			}
			continue
		}
		if !strings.HasPrefix(text, "refused by the tool policy: stub.get-sum was not confirmed") {
			t.Errorf("answer %+v: %q", answer, text)
		}
	}
}

// TestPolicyConfirmByInputRequests confirms with a client of protocol
// 2026-07-28, which is asked through input-required results: the call
// waits, its code paused, while the client answers and calls again.
func TestPolicyConfirmByInputRequests(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	cs, auditPath := policyBridgeOn(t, `{"servers": {"stub": {"confirm": ["get-sum"]}}}`, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		if strings.Contains(req.Params.Message, `"a": 1,`) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}, "2026-07-28")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("protocol %s", v)
	}
	_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": `import asyncio
state = 'kept'
print(await mcp_stub.get_sum(a=40, b=2))
print(await mcp_stub.get_sum(a=2, b=3))
try:
    await mcp_stub.get_sum(a=1, b=1)
except MCPError as e:
    print(e)
print(await asyncio.gather(mcp_stub.get_sum(a=5, b=5), mcp_stub.get_sum(a=6, b=6)))`})
	want := "{'sum': 42}\n{'sum': 5}\nrefused by the tool policy: stub.get-sum was declined by the user (decline)\n[{'sum': 10}, {'sum': 12}]"
	if text != want {
		t.Fatalf("confirmations by input requests:\n%s\nwant:\n%s", text, want)
	}
	if _, text, _ := call(t, cs, map[string]any{"code": "print(state)"}); text != "kept" {
		t.Fatalf("the session after: %q", text)
	}
	mu.Lock()
	n := len(asked)
	mu.Unlock()
	if n != 5 {
		t.Fatalf("%d questions, want 5", n)
	}
	outcomes := map[string]int{}
	for _, rec := range auditRecords(t, auditPath) {
		if rec["event"] == "tool_call" {
			outcomes[rec["outcome"].(string)]++
		}
	}
	if outcomes["accepted"] != 4 || outcomes["declined"] != 1 || outcomes["ok"] != 4 {
		t.Fatalf("audit outcomes %v", outcomes)
	}
}

// TestPolicyLateAnswerByInputRequests answers after the call's timeout:
// the code goes on without the tool (refused), the call ends, and the
// late answer matches nothing.
func TestPolicyLateAnswerByInputRequests(t *testing.T) {
	cs, _ := policyBridgeOn(t, stubPolicy, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		time.Sleep(3 * time.Second)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}, "2026-07-28")
	began := time.Now()
	res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "timeout": 1, "code": "print(await mcp_stub.get_sum(a=1, b=1))"})
	if !res.IsError || !strings.Contains(text, "matches no call waiting for one") || time.Since(began) > 30*time.Second {
		t.Fatalf("a late answer: %q after %v", text, time.Since(began))
	}
	if _, text, _ := call(t, cs, map[string]any{"code": "print('next')"}); text != "next" {
		t.Fatalf("the session after a late answer: %q", text)
	}
}
