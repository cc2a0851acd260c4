package mcpbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/protocol"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Tasks extension's names on the wire, as a client sends and reads
// them.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
	sessionTaskPrefix = "tks_"                       // a task of an MCP session
	progressMetaKey   = "dev.mcp-code-exec/progress" // the code's latest report, in a task's _meta
)

// taskRPC sends one request of protocol 2026-07-28 (no MCP session) to
// hb, declaring the Tasks extension when declare is set, with the headers
// the protocol asks for; it returns the HTTP status and the JSON-RPC
// response.
func taskRPC(t *testing.T, hb *fixture, token, method string, params map[string]any, declare bool) (int, map[string]any) {
	t.Helper()
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{tasks.Extension: map[string]any{}}
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocol.Stateless,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	headers := map[string]string{"MCP-Protocol-Version": protocol.Stateless, "Mcp-Method": method}
	if name, ok := params["name"].(string); ok && method == "tools/call" {
		headers["Mcp-Name"] = name
	}
	if id, ok := params["taskId"].(string); ok {
		headers["Mcp-Name"] = id
	}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	resp, text := hb.do(t, context.Background(), http.MethodPost, hb.url, bytes.NewReader(body), headers)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last string
		for _, line := range strings.Split(text, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id":7`) {
				last = data
			}
		}
		text = last
	}
	var msg map[string]any
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		t.Fatalf("%s: HTTP %d, body %q: %v", method, resp.StatusCode, text, err)
	}
	return resp.StatusCode, msg
}

// runTaskCall calls run_python with args as a client that declares the
// extension and returns the result (a task, or a plain result).
func runTaskCall(t *testing.T, hb *fixture, token string, args map[string]any) map[string]any {
	t.Helper()
	_, msg := taskRPC(t, hb, token, "tools/call", map[string]any{"name": "run_python", "arguments": args}, true)
	res, ok := msg["result"].(map[string]any)
	if !ok {
		t.Fatalf("tools/call answered %v", msg)
	}
	return res
}

// pollTask polls tasks/get until the task's status is one of want (or
// 20 s), and returns its last result.
func pollTask(t *testing.T, hb *fixture, token, id string, want ...string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, msg := taskRPC(t, hb, token, methodTasksGet, map[string]any{"taskId": id}, true)
		res, ok := msg["result"].(map[string]any)
		if !ok {
			t.Fatalf("tasks/get answered %v", msg)
		}
		for _, w := range want {
			if res["status"] == w {
				return res
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task stayed %v, want %v: %v", res["status"], want, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resultText returns the text of a CallToolResult's first content.
func resultText(res map[string]any) string {
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

// isAck reports whether r is the extension's empty acknowledgement.
func isAck(r map[string]any) bool {
	for k := range r {
		if k != "resultType" && k != "_meta" {
			return false
		}
	}
	return r["resultType"] == "complete"
}

// TestTaskLifecycle: a call becomes a task, answered at once in the
// extension's seed shape; tasks/get shows its progress and latest output
// while it runs, then the same result a plain call gives (the handle it
// minted included), as often as it is read.
func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{}, false)
	res := runTaskCall(t, hb, "", map[string]any{"code": "from mcp import runtime\nimport time\nprint('started')\nruntime.report_progress(1, 2, 'half way')\ntime.sleep(1.5)\nprint('done')"})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || res["status"] != taskWorking || !strings.HasPrefix(id, handle.TaskPrefix) ||
		res["ttlMs"] == nil || res["pollIntervalMs"] != float64(1000) || res["createdAt"] == nil || res["lastUpdatedAt"] == nil ||
		res["result"] != nil || res["content"] != nil {
		t.Fatalf("the seed task: %v", res)
	}
	if _, err := time.Parse(time.RFC3339Nano, res["createdAt"].(string)); err != nil {
		t.Fatalf("createdAt: %v", err)
	}
	running := pollTask(t, hb, "", id, taskWorking, taskCompleted)
	for running["status"] == taskWorking && !(strings.Contains(running["statusMessage"].(string), "half way") && strings.Contains(running["statusMessage"].(string), "started")) {
		running = pollTask(t, hb, "", id, taskWorking, taskCompleted)
	}
	if running["status"] == taskWorking {
		msg := running["statusMessage"].(string)
		if !strings.Contains(msg, "progress 1/2: half way") || !strings.Contains(msg, "started") || running["resultType"] != "complete" {
			t.Fatalf("a running task: %v", running)
		}
		meta, _ := running["_meta"].(map[string]any)
		if p, _ := meta[progressMetaKey].(map[string]any); p["progress"] != float64(1) || p["total"] != float64(2) {
			t.Fatalf("the progress figures: %v", running["_meta"])
		}
	}
	done := pollTask(t, hb, "", id, taskCompleted)
	result, _ := done["result"].(map[string]any)
	text := resultText(result)
	sc, _ := result["structuredContent"].(map[string]any)
	h, _ := sc["session"].(string)
	if result["isError"] == true || !strings.HasPrefix(h, handle.Prefix) || !strings.HasSuffix(text, "started\ndone") || !strings.Contains(text, "session: "+h) {
		t.Fatalf("the completed task's result: %v", done)
	}
	again := pollTask(t, hb, "", id, taskCompleted)
	if resultText(again["result"].(map[string]any)) != text {
		t.Fatal("the result changed on a second read")
	}
	// The handle the task minted continues the sandbox, as a plain call's.
	res = runTaskCall(t, hb, "", map[string]any{"code": "print('again')", "session": h})
	done = pollTask(t, hb, "", res["taskId"].(string), taskCompleted)
	if got := resultText(done["result"].(map[string]any)); got != "again" {
		t.Fatalf("a task in the minted sandbox: %q", got)
	}
	if started, _ := hb.eng.counts(); started != 1 {
		t.Fatalf("%d sandboxes started, want 1", started)
	}
}

// TestTaskOnlyWhenAsked: a call becomes a task only for a client that
// declares the extension, with a timeout above MCP_BRIDGE_TASK_AFTER;
// code that raises ends completed, with the plain call's isError result.
func TestTaskOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: 60 * time.Second}, MaxTimeout: 300 * time.Second}, HTTPOptions{}, false)
	res := runTaskCall(t, hb, "", map[string]any{"code": "print(1)", "timeout": 30})
	if res["resultType"] == "task" || resultText(res) == "" {
		t.Fatalf("a call under the threshold: %v", res)
	}
	_, msg := taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(1)", "timeout": 120}}, false)
	if res := msg["result"].(map[string]any); res["resultType"] == "task" {
		t.Fatalf("a client that does not declare the extension got a task: %v", res)
	}
	res = runTaskCall(t, hb, "", map[string]any{"code": "raise ValueError('boom')", "timeout": 120})
	if res["resultType"] != "task" {
		t.Fatalf("a long call of a declaring client: %v", res)
	}
	done := pollTask(t, hb, "", res["taskId"].(string), taskCompleted, taskFailed)
	result, _ := done["result"].(map[string]any)
	if done["status"] != taskCompleted || result["isError"] != true || !strings.Contains(resultText(result), "ValueError: boom") {
		t.Fatalf("code that raised: %v", done)
	}
	// The go-sdk clients, which do not declare the extension, get plain
	// results on both protocol lines; so does a legacy params.task
	// (2025-11-25's experiment, not offered).
	for _, version := range []string{sessionsProtocol, ""} {
		cs, err := hb.connectVersion(t, "", version)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(2)", "timeout": 120}})
		if err != nil || res.IsError || !strings.HasSuffix(res.Content[0].(*mcp.TextContent).Text, "2") {
			t.Fatalf("a go-sdk client on %q: %v %+v", version, err, res)
		}
	}
	_, msg = taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "task": map[string]any{"ttl": 60000},
		"arguments": map[string]any{"code": "print(3)", "timeout": 120}}, false)
	if res := msg["result"].(map[string]any); res["resultType"] == "task" || res["task"] != nil || !strings.HasSuffix(resultText(res), "\n3") {
		t.Fatalf("a legacy params.task: %v", msg)
	}
	// Bad arguments are answered at once, as a plain call's.
	res = runTaskCall(t, hb, "", map[string]any{"code": 7, "timeout": 120})
	if res["resultType"] == "task" || res["isError"] != true {
		t.Fatalf("bad arguments: %v", res)
	}
}

// TestTaskCancelKeepsState: tasks/cancel interrupts the code and keeps
// the sandbox's state; a second cancel, and one of an ended task, are
// acknowledged and change nothing; an update with no question pending
// is acknowledged and ignored.
func TestTaskCancelKeepsState(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{}, false)
	_, msg := taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "x = 1"}}, false)
	sc, _ := msg["result"].(map[string]any)["structuredContent"].(map[string]any)
	h, _ := sc["session"].(string)
	res := runTaskCall(t, hb, "", map[string]any{"code": "import time\nx = 2\nprint('sleeping', flush=True)\ntime.sleep(60)\nx = 3", "session": h})
	id := res["taskId"].(string)
	for !strings.Contains(pollTask(t, hb, "", id, taskWorking)["statusMessage"].(string), "sleeping") {
		time.Sleep(20 * time.Millisecond)
	}
	_, msg = taskRPC(t, hb, "", methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{"confirm-9": map[string]any{"action": "accept"}}}, true)
	if r, _ := msg["result"].(map[string]any); !isAck(r) {
		t.Fatalf("an update with no question pending: %v", msg)
	}
	for range 2 {
		_, msg = taskRPC(t, hb, "", methodTasksCancel, map[string]any{"taskId": id}, true)
		if r, _ := msg["result"].(map[string]any); !isAck(r) {
			t.Fatalf("tasks/cancel: %v", msg)
		}
	}
	done := pollTask(t, hb, "", id, taskCancelled, taskCompleted, taskFailed)
	if done["status"] != taskCancelled || done["result"] != nil {
		t.Fatalf("the cancelled task: %v", done)
	}
	_, msg = taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(x)", "session": h}}, false)
	if got := resultText(msg["result"].(map[string]any)); got != "2" {
		t.Fatalf("the state after the cancel: %q, want 2", got)
	}
	if _, msg = taskRPC(t, hb, "", methodTasksCancel, map[string]any{"taskId": id}, true); msg["result"] == nil {
		t.Fatalf("cancelling an ended task: %v", msg)
	}
	if pollTask(t, hb, "", id, taskCancelled)["status"] != taskCancelled {
		t.Fatal("the ended task changed")
	}
}

// TestTaskRefusals: the task methods refuse a client that does not
// declare the extension (-32021, naming it), unknown, forged, foreign
// and malformed IDs (-32602), a mismatched Mcp-Name (-32020), and the
// 2025-11-25 methods the extension dropped (-32601).
func TestTaskRefusals(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-token"
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{Token: token}, false)
	res := runTaskCall(t, hb, token, map[string]any{"code": "print(1)"})
	id := res["taskId"].(string)
	pollTask(t, hb, token, id, taskCompleted)

	status, msg := taskRPC(t, hb, token, methodTasksGet, map[string]any{"taskId": "gate-test"}, false)
	e, _ := msg["error"].(map[string]any)
	data, _ := json.Marshal(e["data"])
	if status != http.StatusBadRequest || e["code"] != float64(-32021) || string(data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
		t.Fatalf("a client without the extension: HTTP %d %v", status, msg)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, handle.TaskPrefix))
	raw[len(raw)-20] ^= 1
	forged := handle.TaskPrefix + base64.RawURLEncoding.EncodeToString(raw)
	other, _ := handle.NewKeyring(strings.Repeat("k", 40))
	otherID, _, _ := other.MintTask(handle.Sandbox{Ref: "local-1"}, token, time.Now())
	foreignID, _, _ := hb.b.handles.keys.MintTask(handle.Sandbox{Ref: "local-1"}, "another-token-0123456", time.Now())
	unknownID, _, _ := hb.b.handles.keys.MintTask(handle.Sandbox{Ref: "local-1"}, token, time.Now())
	for _, tc := range []struct{ name, id, want string }{
		{"unknown", "gate-test", "not a task ID"},
		{"forged", forged, "forged"},
		{"another key", otherID, "another bridge"},
		{"another client", foreignID, "another client"},
		{"never made", unknownID, "holds no such task"},
		{"a session's, elsewhere", sessionTaskPrefix + "AAAA", "not found in this session"},
	} {
		for _, method := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel} {
			status, msg := taskRPC(t, hb, token, method, map[string]any{"taskId": tc.id}, true)
			e, _ := msg["error"].(map[string]any)
			if status != http.StatusBadRequest || e["code"] != float64(-32602) || !strings.Contains(e["message"].(string), tc.want) {
				t.Errorf("%s %s: HTTP %d %v, want -32602 saying %q", method, tc.name, status, msg, tc.want)
			}
		}
	}
	for _, method := range []string{"tasks/result", "tasks/list"} {
		status, msg := taskRPC(t, hb, token, method, map[string]any{"taskId": id}, true)
		if e, _ := msg["error"].(map[string]any); status != http.StatusNotFound || e["code"] != float64(-32601) {
			t.Errorf("%s: HTTP %d %v, want -32601", method, status, msg)
		}
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"` + id + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	resp, text := hb.do(t, context.Background(), http.MethodPost, hb.url, strings.NewReader(body), map[string]string{
		"MCP-Protocol-Version": protocol.Stateless, "Mcp-Method": methodTasksGet, "Mcp-Name": "another-task", "Authorization": "Bearer " + token})
	if !strings.Contains(text, "-32020") {
		t.Fatalf("a mismatched Mcp-Name: HTTP %d %s", resp.StatusCode, text)
	}
	// The task is there for its client all along.
	if pollTask(t, hb, token, id, taskCompleted)["result"] == nil {
		t.Fatal("the task lost its result")
	}
}

// TestTaskConfirm: a confirmation the code's tool call needs makes the
// task wait for input, with the question under a key never reused;
// tasks/update answers it and the code goes on.
func TestTaskConfirm(t *testing.T) {
	t.Parallel()
	hb := newFixture(t, fixtureOptions{Engine: newTrackingEngine(t), Options: Options{Registry: stubRegistry(t), Tasks: TaskOptions{After: time.Nanosecond}},
		Policy: `{"servers": {"stub": {"confirm": ["get-sum"]}}}`, HTTP: &HTTPOptions{}})
	res := runTaskCall(t, hb, "", map[string]any{"servers": []string{"stub"}, "code": `print(await mcp_stub.get_sum(a=40, b=2))
try:
    await mcp_stub.get_sum(a=1, b=1)
except MCPError as e:
    print(e)`})
	id := res["taskId"].(string)
	for i, answer := range []string{"accept", "decline"} {
		waiting := pollTask(t, hb, "", id, taskInputRequired)
		key := fmt.Sprintf("confirm-%d", i+1)
		req, _ := waiting["inputRequests"].(map[string]any)[key].(map[string]any)
		params, _ := req["params"].(map[string]any)
		if len(waiting["inputRequests"].(map[string]any)) != 1 || req["method"] != "elicitation/create" || !strings.Contains(params["message"].(string), "get-sum") {
			t.Fatalf("question %d: %v", i+1, waiting)
		}
		_, msg := taskRPC(t, hb, "", methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": answer}}}, true)
		if r, _ := msg["result"].(map[string]any); !isAck(r) {
			t.Fatalf("tasks/update: %v", msg)
		}
	}
	done := pollTask(t, hb, "", id, taskCompleted, taskFailed)
	want := "{'sum': 42}\nrefused by the tool policy: stub.get-sum was declined by the user (decline)"
	if got := resultText(done["result"].(map[string]any)); !strings.HasSuffix(got, want) {
		t.Fatalf("the confirmed task: %q, want …%q", got, want)
	}
}

// TestTaskBoundsAndTTL: a task on a busy sandbox waits in its queue and
// says so; the tasks a sandbox and the bridge keep are bounded, with
// errors naming the settings; a task nobody polls ends its time to live
// and is forgotten, its memory freed; a burst of polls changes nothing.
func TestTaskBoundsAndTTL(t *testing.T) {
	const ttl = 8 * time.Second
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: time.Nanosecond, TTL: ttl, Max: 3, MaxPerSandbox: 2}}, HTTPOptions{}, false)
	_, msg := taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "x = 1"}}, false)
	h := msg["result"].(map[string]any)["structuredContent"].(map[string]any)["session"].(string)
	// Running until released, however loaded the machine: the second
	// waits behind it.
	release := filepath.Join(t.TempDir(), "release")
	first := runTaskCall(t, hb, "", map[string]any{"code": "import os, time\nwhile not os.path.exists(" + pyQuote(release) + "):\n    time.sleep(0.01)", "session": h})["taskId"].(string)
	second := runTaskCall(t, hb, "", map[string]any{"code": "print('second')", "session": h})["taskId"].(string)
	if m := pollTask(t, hb, "", second, taskWorking, taskCompleted)["statusMessage"].(string); !strings.Contains(m, "waiting for the call before it") {
		t.Fatalf("a task behind a running one: %q", m)
	}
	res := runTaskCall(t, hb, "", map[string]any{"code": "pass", "session": h})
	if res["resultType"] == "task" || !strings.Contains(resultText(res), "MCP_BRIDGE_MAX_TASKS_PER_SANDBOX") {
		t.Fatalf("a third task in one sandbox: %v", res)
	}
	third := runTaskCall(t, hb, "", map[string]any{"code": "pass"})["taskId"].(string)
	res = runTaskCall(t, hb, "", map[string]any{"code": "pass"})
	if res["resultType"] == "task" || !strings.Contains(resultText(res), "MCP_BRIDGE_MAX_TASKS") {
		t.Fatalf("a fourth task in the bridge: %v", res)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				taskRPC(t, hb, "", methodTasksGet, map[string]any{"taskId": second}, true)
			}
		}()
	}
	wg.Wait()
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := resultText(pollTask(t, hb, "", second, taskCompleted)["result"].(map[string]any)); got != "second" {
		t.Fatalf("the queued task after 400 polls: %q", got)
	}
	pollTask(t, hb, "", first, taskCompleted)
	pollTask(t, hb, "", third, taskCompleted)
	// The TTL (long enough for 400 polls under -race on a loaded machine)
	// ends, counted from each task's end, however often they are read.
	// (The sweep that forgets them: TestTaskTable in mcpbridge/tasks.)
	expired := func(id string) bool {
		_, msg := taskRPC(t, hb, "", methodTasksGet, map[string]any{"taskId": id}, true)
		e, _ := msg["error"].(map[string]any)
		return e["code"] == float64(-32602) && strings.Contains(fmt.Sprint(e["message"]), "expired")
	}
	waitForWithin(t, ttl+time.Minute, "the three tasks past their time to live", func() bool {
		time.Sleep(100 * time.Millisecond) // a read every tenth of a second
		return expired(first) && expired(second) && expired(third)
	})
	_, msg = taskRPC(t, hb, "", methodTasksGet, map[string]any{"taskId": first}, true)
	if e, _ := msg["error"].(map[string]any); e["code"] != float64(-32602) || !strings.Contains(e["message"].(string), "expired") {
		t.Fatalf("a task past its time to live: %v", msg)
	}
	if res := runTaskCall(t, hb, "", map[string]any{"code": "pass", "session": h}); res["resultType"] != "task" {
		t.Fatalf("a task once the others expired: %v", res)
	}
}

// TestTasksRunInOrder: tasks made one after the other on one sandbox run
// in that order: a task is answered only once its call holds its place
// in the sandbox's queue (CI once saw a second task run before the
// first, which had not reached the queue yet).
func TestTasksRunInOrder(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{}, false)
	_, msg := taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "order = []"}}, false)
	h := msg["result"].(map[string]any)["structuredContent"].(map[string]any)["session"].(string)
	var ids []string
	for i := range 8 {
		ids = append(ids, runTaskCall(t, hb, "", map[string]any{"code": fmt.Sprintf("order.append(%d)", i), "session": h})["taskId"].(string))
	}
	for _, id := range ids {
		pollTask(t, hb, "", id, taskCompleted)
	}
	_, msg = taskRPC(t, hb, "", "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(order)", "session": h}}, false)
	if got := resultText(msg["result"].(map[string]any)); got != "[0, 1, 2, 3, 4, 5, 6, 7]" {
		t.Fatalf("the tasks ran in the order %s", got)
	}
}

// A rawConn speaks JSON-RPC to a bridge over an in-memory connection, as
// a 2026-07-28 client over stdio does: one MCP session, per-request
// _meta.
type rawConn struct {
	t    *testing.T
	conn mcp.Connection
	id   int64
}

// rawSession connects a rawConn to the bridge of f.
func (f *fixture) rawSession(t *testing.T) *rawConn {
	t.Helper()
	conn, err := f.serve(t).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn}
}

// call sends method with params (declaring the extension) and returns the
// response's result or error.
func (c *rawConn) call(method string, params map[string]any) (map[string]any, map[string]any) {
	c.t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocol.Stateless,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-stdio", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasks.Extension: map[string]any{}}},
	}
	c.id++
	raw, _ := json.Marshal(params)
	id, _ := jsonrpc.MakeID(float64(c.id))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		c.t.Fatal(err)
	}
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue // a notification
		}
		if resp.Error != nil {
			var e map[string]any
			data, _ := json.Marshal(resp.Error)
			json.Unmarshal(data, &e)
			return nil, e
		}
		var r map[string]any
		json.Unmarshal(resp.Result, &r)
		return r, nil
	}
}

// TestTaskOfAnMCPSession: over one MCP session (stdio), a task is bound
// to the session: its ID is followed there, and not through another.
func TestTaskOfAnMCPSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{Options: Options{Tasks: TaskOptions{After: time.Nanosecond}}})
	c, other := f.rawSession(t), f.rawSession(t)
	res, e := c.call("tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "x = 6\nprint(x * 7)"}})
	id, _ := res["taskId"].(string)
	if e != nil || res["resultType"] != "task" || !strings.HasPrefix(id, sessionTaskPrefix) {
		t.Fatalf("tools/call over a session: %v %v", res, e)
	}
	deadline := time.Now().Add(20 * time.Second)
	for res["status"] != taskCompleted && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if res, e = c.call(methodTasksGet, map[string]any{"taskId": id}); e != nil {
			t.Fatalf("tasks/get: %v", e)
		}
	}
	if got := resultText(res["result"].(map[string]any)); got != "42" {
		t.Fatalf("the session's task: %v", res)
	}
	if _, e := other.call(methodTasksGet, map[string]any{"taskId": id}); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("the task through another session: %v", e)
	}
	res, _ = c.call("tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(x)"}})
	for res["status"] != taskCompleted && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		res, _ = c.call(methodTasksGet, map[string]any{"taskId": res["taskId"].(string)})
	}
	if got := resultText(res["result"].(map[string]any)); got != "6" {
		t.Fatalf("the session's state in its next task: %v", res)
	}
}

// TestTaskStatusNotifications: subscriptions/listen naming tasks is
// acknowledged with the tasks of this client only, then sends each task
// whole on every status change until all ended; a client that does not
// declare the extension is refused.
func TestTaskStatusNotifications(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-token"
	hb := serveBridge(t, Options{Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{Token: token}, false)
	id := runTaskCall(t, hb, token, map[string]any{"code": "import time\ntime.sleep(1)\nprint('slept')"})["taskId"].(string)
	foreign, _, _ := hb.b.handles.keys.MintTask(handle.Sandbox{Ref: "local-1"}, "another-token-0123456", time.Now())
	listen := func(declare bool) (*http.Response, []map[string]any) {
		caps := map[string]any{}
		if declare {
			caps["extensions"] = map[string]any{tasks.Extension: map[string]any{}}
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": map[string]any{
			"notifications": map[string]any{"taskIds": []string{id, foreign, id}},
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": protocol.Stateless,
				"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": caps}}})
		resp, text := hb.do(t, context.Background(), http.MethodPost, hb.url, bytes.NewReader(body), map[string]string{
			"MCP-Protocol-Version": protocol.Stateless, "Mcp-Method": "subscriptions/listen", "Authorization": "Bearer " + token})
		var msgs []map[string]any
		for _, line := range strings.Split(text, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				json.Unmarshal([]byte(d), &m)
				msgs = append(msgs, m)
			}
		}
		if len(msgs) == 0 {
			var m map[string]any
			json.Unmarshal([]byte(text), &m)
			msgs = append(msgs, m)
		}
		return resp, msgs
	}
	if resp, msgs := listen(false); resp.StatusCode != http.StatusBadRequest || msgs[0]["error"].(map[string]any)["code"] != float64(-32021) {
		t.Fatalf("a listen without the extension: %d %v", resp.StatusCode, msgs)
	}
	_, msgs := listen(true)
	if len(msgs) < 3 {
		t.Fatalf("the stream: %v", msgs)
	}
	ack := msgs[0]["params"].(map[string]any)
	if msgs[0]["method"] != "notifications/subscriptions/acknowledged" || fmt.Sprint(ack["notifications"].(map[string]any)["taskIds"]) != "["+id+"]" {
		t.Fatalf("the acknowledgement: %v", msgs[0])
	}
	var statuses []string
	for _, m := range msgs[1 : len(msgs)-1] {
		p := m["params"].(map[string]any)
		if m["method"] != "notifications/tasks" || p["taskId"] != id || p["resultType"] != nil || p["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != float64(9) {
			t.Fatalf("a notification: %v", m)
		}
		statuses = append(statuses, p["status"].(string))
		checkSchema(t, "TaskStatusNotification", m)
	}
	last := msgs[len(msgs)-2]["params"].(map[string]any)
	if statuses[len(statuses)-1] != taskCompleted || !strings.HasSuffix(resultText(last["result"].(map[string]any)), "\nslept") {
		t.Fatalf("the notifications: %v", statuses)
	}
	if end := msgs[len(msgs)-1]; end["id"] != float64(9) || end["result"].(map[string]any)["resultType"] != "complete" {
		t.Fatalf("the stream's end: %v", end)
	}
}
