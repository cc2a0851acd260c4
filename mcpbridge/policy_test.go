package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/protocol"
)

// policyBridge connects a client (with elicitation answered by answer
// when it is set) to a bridge on the stub servers under the policy text,
// with an audit log; it returns the client and the audit log's path.
func policyBridge(t *testing.T, text string, answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, string) {
	return policyBridgeOn(t, text, answer, approval.ElicitMaxProtocol)
}

// policyBridgeOn is policyBridge with the client on protocol version.
func policyBridgeOn(t *testing.T, text string, answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), version string) (*mcp.ClientSession, string) {
	t.Helper()
	f := newFixture(t, policyFixture(t, text, answer, version))
	return f.connectInMemory(t), f.auditPath
}

// policyFixture is a bridge on the stub servers under the policy text,
// with an audit log, whose clients answer elicitation with answer (when
// set) on protocol version.
func policyFixture(t *testing.T, text string, answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), version string) fixtureOptions {
	return fixtureOptions{Options: Options{Registry: stubRegistry(t)}, Policy: text, Audit: true, Client: mcp.ClientOptions{ElicitationHandler: answer}, Protocol: version}
}

// recordCount returns how many events an audit record stands for: its
// count, for merged refusals, else 1.
func recordCount(rec map[string]any) int {
	if n, ok := rec["count"].(float64); ok {
		return int(n)
	}
	return 1
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
	t.Parallel()
	var asked []string
	cs, auditPath := policyBridge(t, stubPolicy, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if strings.Contains(req.Params.Message, `"a" = 40`) {
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
	// A denied name is in no list, but naming it gives a function (whose
	// call the bridge refuses), so hasattr is True.
	if !strings.HasPrefix(text, "True True\n") || strings.Contains(text, "'crash'") || strings.Count(text, wantDenied) != 2 {
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
	if text != "ok 0\nok 1\nok 2\nrefused by the tool policy: more than 3 proxied tool calls in one run_python call (max_tool_calls (in policy.json))" {
		t.Fatalf("quota: %q", text)
	}
	if text := run(map[string]any{"code": "print(await mcp_stub.echo(message='next call'))"}); text != "next call" {
		t.Fatalf("the bound is per call: %q", text)
	}

	var outcomes map[string]int
	var runs int
	// Refusals of one tool for one reason within a second are merged
	// (audit.MergeWindow): the second comes with the window's end.
	waitFor(t, "the merged refusals", func() bool {
		outcomes, runs = map[string]int{}, 0
		for _, rec := range auditRecords(t, auditPath) {
			switch rec["event"] {
			case "run_python":
				runs++
				if len(rec["code_sha256"].(string)) != 64 || rec["session"] == nil || rec["status"] == nil {
					t.Errorf("run_python record %v", rec)
				}
			case "tool_call":
				outcomes[rec["tool"].(string)+" "+rec["outcome"].(string)] += recordCount(rec)
			default:
				t.Errorf("record %v", rec)
			}
		}
		return outcomes["crash denied"] >= 2
	})
	// The bridge refuses the denied tool by both routes, proxy object and
	// runtime.call_tool: a record of each (merged: one with a count).
	want := map[string]int{"crash denied": 2, "get-sum accepted": 1, "get-sum ok": 1, "get-sum declined": 1, "echo ok": 4, "echo denied": 1}
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	cs, auditPath := policyBridgeOn(t, `{"servers": {"stub": {"confirm": ["get-sum"]}}}`, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		if strings.Contains(req.Params.Message, "\"a\" = 1\n") {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}, protocol.Stateless)
	if v := cs.InitializeResult().ProtocolVersion; v != protocol.Stateless {
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
	t.Parallel()
	var auditPath atomic.Pointer[string]
	cs, path := policyBridgeOn(t, stubPolicy, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		// Answered once the call that asked has ended (its timeout is
		// 1 s), however long that takes: its record is written then.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if data, _ := os.ReadFile(*auditPath.Load()); bytes.Contains(data, []byte(`"event":"run_python"`)) {
				break
			}
			if time.Now().After(deadline) {
				t.Error("the call that asked did not end within a minute of its 1 s timeout")
				break
			}
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}, protocol.Stateless)
	auditPath.Store(&path)
	began := time.Now()
	res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "timeout": 1, "code": "print(await mcp_stub.get_sum(a=1, b=1))"})
	if !res.IsError || !strings.Contains(text, "matches no call waiting for one") || time.Since(began) > 30*time.Second {
		t.Fatalf("a late answer: %q after %v", text, time.Since(began))
	}
	if _, text, _ := call(t, cs, map[string]any{"code": "print('next')"}); text != "next" {
		t.Fatalf("the session after a late answer: %q", text)
	}
}

// TestPolicyDeniedToolsAreRefusedByTheBridge calls denied tools by every
// route sandbox code has: the proxy object (by name and by alias),
// runtime.call_tool, a tool outside an allow list and a tool of a server
// the policy forbids to load. The bridge refuses each, and each refusal
// is one denied audit record, with the rule: the sandbox refuses none
// itself.
func TestPolicyDeniedToolsAreRefusedByTheBridge(t *testing.T) {
	t.Parallel()
	const text = `{"servers": {"stub": {"allow": ["echo", "get-sum", "crash"], "deny": ["crash", "get-*"]}, "Stub Two": {"load": false}}}`
	cs, auditPath := policyBridge(t, text, nil)
	policyFile := filepath.Join(filepath.Dir(auditPath), "policy.json")
	_, out, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": `from mcp import runtime
print(sorted(n for n in dir(mcp_stub)), hasattr(mcp_stub, 'nope'))
routes = [
    ('proxy', lambda: mcp_stub.crash()),
    ('alias', lambda: mcp_stub.get_sum(a=1, b=2)),
    ('name', lambda: getattr(mcp_stub, 'get-sum')(arguments={'a': 3, 'b': 4})),
    ('call_tool', lambda: runtime.call_tool('stub', 'crash', {})),
    ('allow', lambda: runtime.call_tool('stub', 'read_text_file', {'path': '/x'})),
    ('load', lambda: runtime.call_tool('Stub Two', 'echo', {'message': 'm'})),
]
for route, fn in routes:
    try:
        await fn()
    except MCPError as e:
        print(route, type(e).__name__, isinstance(e, AttributeError), e)
print(await mcp_stub.echo(message='still fine'))`})
	note := " (in " + filepath.Base(policyFile) + ")"
	want := strings.Join([]string{
		"['echo'] False",
		`proxy MCPToolDenied True refused by the tool policy: stub.crash is denied: servers["stub"].deny "crash"` + note,
		`alias MCPToolDenied True refused by the tool policy: stub.get-sum is denied: servers["stub"].deny "get-*"` + note,
		`name MCPToolDenied True refused by the tool policy: stub.get-sum is denied: servers["stub"].deny "get-*"` + note,
		`call_tool MCPError False refused by the tool policy: stub.crash is denied: servers["stub"].deny "crash"` + note,
		`allow MCPError False refused by the tool policy: stub.read_text_file is denied: servers["stub"].allow lists no glob it matches` + note,
		`load MCPError False refused by the tool policy: the server 'Stub Two' may not be loaded: servers["Stub Two"].load is false` + note,
		"still fine",
	}, "\n")
	if out != want {
		t.Errorf("denied calls:\n%s\nwant:\n%s", out, want)
	}

	type record struct{ server, tool, rule, err string }
	var denied []record
	// Refusals of one tool for one reason within a second are merged
	// (audit.MergeWindow): the repeated ones come with the window's end,
	// as one record with their count.
	waitFor(t, "the merged refusals", func() bool {
		denied = nil
		for _, rec := range auditRecords(t, auditPath) {
			if rec["event"] == "tool_call" && rec["outcome"] == "denied" {
				rule, _ := rec["rule"].(string)
				msg, _ := rec["error"].(string)
				for range recordCount(rec) {
					denied = append(denied, record{rec["server"].(string), rec["tool"].(string), rule, msg})
				}
			}
		}
		return len(denied) >= 6
	})
	order := func(a, b record) int { return strings.Compare(a.tool+a.err, b.tool+b.err) }
	slices.SortFunc(denied, order)
	wantDenied := []record{
		{"stub", "crash", `servers["stub"].deny "crash"`, `refused by the tool policy: stub.crash is denied: servers["stub"].deny "crash"` + note},
		{"stub", "get-sum", `servers["stub"].deny "get-*"`, `refused by the tool policy: stub.get-sum is denied: servers["stub"].deny "get-*"` + note},
		{"stub", "get-sum", `servers["stub"].deny "get-*"`, `refused by the tool policy: stub.get-sum is denied: servers["stub"].deny "get-*"` + note},
		{"stub", "crash", `servers["stub"].deny "crash"`, `refused by the tool policy: stub.crash is denied: servers["stub"].deny "crash"` + note},
		{"stub", "read_text_file", `servers["stub"].allow lists no glob it matches`, `refused by the tool policy: stub.read_text_file is denied: servers["stub"].allow lists no glob it matches` + note},
		{"Stub Two", "echo", `servers["Stub Two"].load is false`, `refused by the tool policy: the server 'Stub Two' may not be loaded: servers["Stub Two"].load is false` + note},
	}
	slices.SortFunc(wantDenied, order)
	if len(denied) != len(wantDenied) {
		t.Fatalf("denied audit records:\n%q\nwant:\n%q", denied, wantDenied)
	}
	for i := range wantDenied {
		if denied[i] != wantDenied[i] {
			t.Errorf("denied audit record %d: %q, want %q", i, denied[i], wantDenied[i])
		}
	}
}
