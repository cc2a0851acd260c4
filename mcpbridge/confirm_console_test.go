package mcpbridge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
)

// consoleBridge is policyBridge with the console served: it returns the
// client session, the bridge, the console's server and the audit log's
// path.
func consoleBridge(t *testing.T, text string, answer func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *Bridge, *httptest.Server, string) {
	t.Helper()
	fo := policyFixture(t, text, answer, approval.ElicitMaxProtocol)
	fo.HTTP = &HTTPOptions{ConsoleToken: testConsoleToken}
	f := newFixture(t, fo)
	return f.connectInMemory(t), f.b, f.srv, f.auditPath
}

// answerOnConsole waits for a question on br's console and answers it
// as operator through the console's bearer route.
func answerOnConsole(t *testing.T, br *Bridge, srv *httptest.Server, answer, operator string) {
	t.Helper()
	var id string
	waitFor(t, "a question on the console", func() bool {
		qs := br.approvals.Load().List()
		if len(qs) == 1 {
			id = qs[0].ID
		}
		return id != ""
	})
	if status := answerQuestion(t, srv.URL, srv.Client(), id, answer, operator); status != http.StatusOK {
		t.Fatalf("answering on the console: %d", status)
	}
}

// TestConsoleApprovals: a confirm rule naming the console only waits for
// an operator, who approves one call and declines another; the client
// is not asked; the audit records say where and by whom.
func TestConsoleApprovals(t *testing.T) {
	t.Parallel()
	var clientAsked atomic.Int32
	cs, br, srv, auditPath := consoleBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"], "confirm_via": ["console"]}}}`,
		func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			clientAsked.Add(1)
			return &mcp.ElicitResult{Action: "accept"}, nil
		})
	done := make(chan string, 1)
	go func() {
		_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": `print(await mcp_stub.get_sum(a=40, b=2))
try:
    await mcp_stub.get_sum(a=1, b=1)
except MCPError as e:
    print('MCPError', e)`})
		done <- text
	}()
	waitFor(t, "the question", func() bool {
		select {
		case text := <-done:
			t.Fatalf("the call ended without a question: %q", text)
		default:
		}
		return len(br.approvals.Load().List()) == 1
	})
	q := br.approvals.Load().List()[0]
	if q.Server != "stub" || q.Tool != "get-sum" || !strings.HasPrefix(q.Session, "session-") || !strings.Contains(q.Arguments, `"a" = 40`) || q.Line != 1 {
		t.Errorf("the question %+v", q)
	}
	answerOnConsole(t, br, srv, "approve", "Ada")
	answerOnConsole(t, br, srv, "decline", "Bob")
	want := "{'sum': 42}\nMCPError refused by the tool policy: stub.get-sum was declined by the operator \"Bob\" on the console"
	if text := <-done; !strings.HasPrefix(text, want) {
		t.Fatalf("the call: %q, want %q", text, want)
	}
	if n := clientAsked.Load(); n != 0 {
		t.Errorf("the client was asked %d times; the rule names the console only", n)
	}
	var got []string
	for _, rec := range auditRecords(t, auditPath) {
		if rec["event"] == "tool_call" && rec["rule"] != nil {
			got = append(got, rec["outcome"].(string)+" "+rec["answered_via"].(string)+" "+rec["answered_by"].(string))
		}
	}
	if strings.Join(got, ", ") != "accepted console Ada, declined console Bob" {
		t.Errorf("audit records: %q", got)
	}
}

// TestConsoleApprovalsClientFirst: a rule naming both asks both; the
// client's answer wins here, and the question leaves the console.
func TestConsoleApprovalsClientFirst(t *testing.T) {
	t.Parallel()
	cs, br, _, auditPath := consoleBridge(t, `{"confirm_via": ["client", "console"], "servers": {"stub": {"confirm": ["get-sum"]}}}`,
		func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		})
	if _, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "print(await mcp_stub.get_sum(a=1, b=2))"}); text != "{'sum': 3}" {
		t.Fatalf("the call: %q", text)
	}
	if qs := br.approvals.Load().List(); len(qs) != 0 {
		t.Errorf("questions left on the console: %+v", qs)
	}
	for _, rec := range auditRecords(t, auditPath) {
		if rec["event"] == "tool_call" && rec["rule"] != nil && (rec["outcome"] != "accepted" || rec["answered_via"] != "client") {
			t.Errorf("audit record %v", rec)
		}
	}
}

// TestConsoleOnlyWithoutConsole: a rule naming the console only, on a
// bridge serving none, refuses the call saying so.
func TestConsoleOnlyWithoutConsole(t *testing.T) {
	t.Parallel()
	cs, _ := policyBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"], "confirm_via": ["console"]}}}`, nil)
	_, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "code": "try:\n    await mcp_stub.get_sum(a=1, b=2)\nexcept MCPError as e:\n    print(e)"})
	if !strings.Contains(text, "needs an operator's answer on the console") || !strings.Contains(text, "MCP_BRIDGE_CONSOLE_TOKEN") {
		t.Fatalf("the call: %q", text)
	}
}

// TestConsoleQuestionUnanswered: a question nobody answers ends with the
// call's timeout, leaves the console, and its audit record says so.
func TestConsoleQuestionUnanswered(t *testing.T) {
	t.Parallel()
	cs, br, _, auditPath := consoleBridge(t, `{"servers": {"stub": {"confirm": ["get-sum"], "confirm_via": ["console"]}}}`, nil)
	res, text, _ := call(t, cs, map[string]any{"servers": []string{"stub"}, "timeout": 1, "code": "print(await mcp_stub.get_sum(a=1, b=2))"})
	if !res.IsError || strings.Contains(text, "'sum'") {
		t.Fatalf("the call: %q", text)
	}
	// The proxied call ends with the call: wait for it to leave.
	waitFor(t, "the question to leave the console", func() bool { return len(br.approvals.Load().List()) == 0 })
	waitFor(t, "the audit record", func() bool {
		for _, rec := range auditRecords(t, auditPath) {
			if rec["event"] == "tool_call" {
				return true
			}
		}
		return false
	})
	for _, rec := range auditRecords(t, auditPath) {
		if rec["event"] == "tool_call" && (rec["outcome"] != "declined" || rec["answered_via"] != "none") {
			t.Errorf("audit record %v", rec)
		}
	}
}

// answerQuestion answers question id on the console of srv as operator
// (bearer route) and returns the HTTP status: 200 answered, 404 the
// question was gone (answered elsewhere first).
func answerQuestion(t *testing.T, srv string, client *http.Client, id, answer, operator string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv+"/console/answer", strings.NewReader(url.Values{"question": {id}, "answer": {answer}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testConsoleToken)
	req.Header.Set("X-Console-Operator", operator)
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConsoleRacesTaskUpdate: a rule naming both the client and the
// console, on a task (the client answers through tasks/update). Both
// answer the first question at once, 20 times over: exactly one answer
// counts, the tool runs once, the other answer is acknowledged (tasks/update)
// or told the question is gone (404), never both applied. Then the console
// declines the second question and a late tasks/update accepting it
// changes nothing.
func TestConsoleRacesTaskUpdate(t *testing.T) {
	t.Parallel()
	hb := newFixture(t, fixtureOptions{Engine: newTrackingEngine(t), Options: Options{Registry: stubRegistry(t), Tasks: TaskOptions{After: time.Nanosecond}},
		Policy: `{"confirm_via": ["client", "console"], "servers": {"stub": {"confirm": ["get-sum"]}}}`, Audit: true, HTTP: &HTTPOptions{ConsoleToken: testConsoleToken}})
	const rounds = 20
	res := runTaskCall(t, hb, "", map[string]any{"servers": []string{"stub"}, "code": fmt.Sprintf(`n = 0
for i in range(%d):
    n += (await mcp_stub.get_sum(a=i, b=1))['sum'] - i
print('ran', n)
try:
    await mcp_stub.get_sum(a=1, b=1)
except MCPError as e:
    print(e)`, rounds)})
	id := res["taskId"].(string)
	for i := range rounds {
		key := fmt.Sprintf("confirm-%d", i+1)
		waiting := pollTask(t, hb, "", id, taskInputRequired)
		if _, ok := waiting["inputRequests"].(map[string]any)[key]; !ok {
			t.Fatalf("round %d: the task waits for %v, want %s", i, waiting["inputRequests"], key)
		}
		var qid string
		waitFor(t, "the question on the console", func() bool {
			if qs := hb.b.approvals.Load().List(); len(qs) == 1 {
				qid = qs[0].ID
			}
			return qid != ""
		})
		var wg sync.WaitGroup
		var status int
		var update map[string]any
		wg.Add(2)
		go func() {
			defer wg.Done()
			status = answerQuestion(t, hb.srv.URL, hb.srv.Client(), qid, "approve", "Ada")
		}()
		go func() {
			defer wg.Done()
			_, update = taskRPC(t, hb, "", methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept"}}}, true)
		}()
		wg.Wait()
		if r, _ := update["result"].(map[string]any); !isAck(r) {
			t.Fatalf("round %d: tasks/update %v", i, update)
		}
		if status != http.StatusOK && status != http.StatusNotFound {
			t.Fatalf("round %d: the console's answer got %d", i, status)
		}
	}
	// The last question: the console declines; the client's late accept
	// is acknowledged and ignored.
	key := fmt.Sprintf("confirm-%d", rounds+1)
	pollTask(t, hb, "", id, taskInputRequired)
	var qid string
	waitFor(t, "the last question on the console", func() bool {
		if qs := hb.b.approvals.Load().List(); len(qs) == 1 {
			qid = qs[0].ID
		}
		return qid != ""
	})
	if st := answerQuestion(t, hb.srv.URL, hb.srv.Client(), qid, "decline", "Bob"); st != http.StatusOK {
		t.Fatalf("declining on the console: %d", st)
	}
	_, update := taskRPC(t, hb, "", methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept"}}}, true)
	if r, _ := update["result"].(map[string]any); !isAck(r) {
		t.Fatalf("a late tasks/update: %v", update)
	}
	done := pollTask(t, hb, "", id, taskCompleted, taskFailed)
	want := fmt.Sprintf("ran %d\nrefused by the tool policy: stub.get-sum was declined by the operator \"Bob\" on the console", rounds)
	if got := resultText(done["result"].(map[string]any)); !strings.HasSuffix(strings.TrimSpace(got), want) {
		t.Fatalf("the task: %q, want …%q", got, want)
	}
	var via []string
	for _, rec := range auditRecords(t, hb.auditPath) {
		if rec["event"] == "tool_call" && rec["rule"] != nil {
			via = append(via, rec["outcome"].(string)+" "+rec["answered_via"].(string))
		}
	}
	if len(via) != rounds+1 || via[rounds] != "declined console" {
		t.Fatalf("audit records: %q", via)
	}
	won := map[string]int{}
	for _, v := range via[:rounds] {
		if v != "accepted console" && v != "accepted client" {
			t.Errorf("audit record of a raced answer: %q", v)
		}
		won[v]++
	}
	t.Logf("first answers of %d races: %v", rounds, won)
	if qs := hb.b.approvals.Load().List(); len(qs) != 0 {
		t.Errorf("questions left on the console: %+v", qs)
	}
}
