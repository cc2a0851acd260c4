//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// taskClient speaks protocol 2026-07-28 as raw JSON-RPC over HTTP (no
// SDK ships the Tasks extension's requester in Go), declaring the
// extension and elicitation in every request, with the headers the
// protocol asks for (Mcp-Name carries the task ID of task methods).
type taskClient struct {
	t     testing.TB
	hc    *http.Client
	url   string
	plain bool // declares nothing: a client without the extension
}

// taskClientOf returns a task client of replica b.
func taskClientOf(t testing.TB, b *httpBridge) *taskClient {
	return &taskClient{t: t, hc: b.httpClient(b.token), url: b.url}
}

// rpc sends method with params and returns the JSON-RPC response.
func (c *taskClient) rpc(method string, params map[string]any) map[string]any {
	c.t.Helper()
	caps := map[string]any{}
	if !c.plain {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "integration-tasks", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	text := string(data)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		text = ""
		for _, line := range strings.Split(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id":1`) {
				text = d
			}
		}
	}
	var msg map[string]any
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		c.t.Fatalf("%s: HTTP %d %q: %v", method, resp.StatusCode, data, err)
	}
	return msg
}

// call calls run_python with args and returns its result: a task or a
// plain result.
func (c *taskClient) call(args map[string]any) map[string]any {
	c.t.Helper()
	msg := c.rpc("tools/call", map[string]any{"name": "run_python", "arguments": args})
	res, ok := msg["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("tools/call: %v", msg)
	}
	return res
}

// get returns tasks/get of id: its result, or its error.
func (c *taskClient) get(id string) (map[string]any, map[string]any) {
	c.t.Helper()
	msg := c.rpc("tasks/get", map[string]any{"taskId": id})
	res, _ := msg["result"].(map[string]any)
	e, _ := msg["error"].(map[string]any)
	if res == nil && e == nil {
		c.t.Fatalf("tasks/get: %v", msg)
	}
	return res, e
}

// await polls id until its status is one of want (or within) and returns
// the task, or until ok accepts it.
func (c *taskClient) await(id string, within time.Duration, ok func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		res, e := c.get(id)
		if e != nil {
			c.t.Fatalf("tasks/get %s: %v", id, e)
		}
		if ok(res) {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the task never got there in %v: %v", within, res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// status returns a matcher of tasks in one of statuses.
func status(statuses ...string) func(map[string]any) bool {
	return func(res map[string]any) bool {
		for _, s := range statuses {
			if res["status"] == s {
				return true
			}
		}
		return false
	}
}

// taskText returns the text of a task's result.
func taskText(res map[string]any) string {
	r, _ := res["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// TestTasksAcrossReplicas: a task made on one replica is polled,
// answered and cancelled through another, its record kept in its
// sandbox; cancelling keeps the sandbox's state; a replica killed in a
// task leaves it readable, failed; bad IDs are refused on every replica.
func TestTasksAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// The first task runs until r2 has seen it running, however
		// loaded the engine: it waits on a gate, a loopback server the
		// policy lets it reach through the egress gateway.
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		gateSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-gate:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(gateSrv.Close)
		t.Cleanup(open) // first: the server's Close waits for its requests
		gateHost := strings.TrimPrefix(gateSrv.URL, "http://")
		var policy map[string]any
		json.Unmarshal([]byte(everythingPolicy), &policy)
		policy["network"] = map[string]any{"allow": []string{gateHost}}
		policyText, _ := json.Marshal(policy)

		home, _ := npmHome(t)
		writeFile(t, filepath.Join(home, "MCPs", "policy.json"), string(policyText))
		key, token := rand.Text()+rand.Text(), rand.Text()
		env := []string{"HOME=" + home, "MCP_BRIDGE_TASK_AFTER=0"}
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1", env...))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2", env...))
		removeResumable(t, e, r1, r2)
		c1, c2 := taskClientOf(t, r1), taskClientOf(t, r2)

		// Made on r1, followed on r2: progress and output while it runs
		// (until the gate opens: a fixed 4 s were not long enough, once,
		// for r2 to read its record through a loaded engine on Podman in
		// CI), then the whole result with the handle it minted.
		res := c1.call(map[string]any{"code": "from mcp import runtime\nimport urllib.request\nx = 1\nprint('begun', flush=True)\nruntime.report_progress(1, 4, 'a quarter')\n" +
			"urllib.request.urlopen('http://" + gateHost + "/', timeout=150).read()\nprint('ended')", "timeout": 180})
		id, _ := res["taskId"].(string)
		if res["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call on r1: %v", res)
		}
		running := c2.await(id, time.Minute, func(r map[string]any) bool {
			m, _ := r["statusMessage"].(string)
			return r["status"] != "working" || strings.Contains(m, "a quarter") && strings.Contains(m, "begun")
		})
		if running["status"] != "working" {
			t.Fatalf("r2 never saw the task running with its progress: %v", running)
		}
		open()
		done := c2.await(id, time.Minute, status("completed", "failed", "cancelled"))
		sc, _ := done["result"].(map[string]any)["structuredContent"].(map[string]any)
		h, _ := sc["session"].(string)
		if done["status"] != "completed" || !strings.HasSuffix(taskText(done), "begun\nended") || h == "" {
			t.Fatalf("the task through r2: %v", done)
		}
		if again, _ := c1.get(id); taskText(again) != taskText(done) {
			t.Fatalf("r1 shows another result: %v", again)
		}

		// A confirmation asked on r1 answered through r2.
		res = c1.call(map[string]any{"session": h, "servers": []string{"everything"}, "code": "print(await mcp_everything.get_sum(a=20, b=22))", "timeout": 120})
		id = res["taskId"].(string)
		waiting := c2.await(id, 2*time.Minute, status("input_required", "completed", "failed"))
		if _, ok := waiting["inputRequests"].(map[string]any)["confirm-1"]; waiting["status"] != "input_required" || !ok {
			t.Fatalf("the task waiting for input, through r2: %v", waiting)
		}
		msg := c2.rpc("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"confirm-1": map[string]any{"action": "accept"}}})
		if r, _ := msg["result"].(map[string]any); r["resultType"] != "complete" {
			t.Fatalf("tasks/update through r2: %v", msg)
		}
		done = c1.await(id, time.Minute, status("completed", "failed", "cancelled"))
		if !strings.HasSuffix(taskText(done), "The sum of 20 and 22 is 42.") {
			t.Fatalf("the confirmed task: %v", done)
		}

		// Cancelled through r2 while r1 runs it: the code stops, the
		// state stays.
		res = c1.call(map[string]any{"session": h, "code": "import time\nx = 2\nprint('waiting', flush=True)\ntime.sleep(100)\nx = 3", "timeout": 120})
		id = res["taskId"].(string)
		c2.await(id, time.Minute, func(r map[string]any) bool {
			m, _ := r["statusMessage"].(string)
			return strings.Contains(m, "waiting")
		})
		for range 2 {
			if msg := c2.rpc("tasks/cancel", map[string]any{"taskId": id}); msg["result"] == nil {
				t.Fatalf("tasks/cancel through r2: %v", msg)
			}
		}
		began := time.Now()
		if done := c2.await(id, time.Minute, status("completed", "failed", "cancelled")); done["status"] != "cancelled" {
			t.Fatalf("the cancelled task: %v", done)
		}
		t.Logf("cancelled through the other replica in %v", time.Since(began))
		if again := c2.call(map[string]any{"session": h, "code": "print(x)"}); again["resultType"] != "task" {
			t.Fatalf("a call after the cancel: %v", again)
		} else if done := c2.await(again["taskId"].(string), time.Minute, status("completed")); taskText(done) != "2" {
			t.Fatalf("the state after the cancel: %q", taskText(done))
		}

		// r2 killed while it runs a task: r1 reads it as failed, lost.
		res = c2.call(map[string]any{"session": h, "code": "import time\ntime.sleep(200)", "timeout": 300})
		id = res["taskId"].(string)
		c1.await(id, time.Minute, status("working"))
		r2.cmd.Process.Signal(syscall.SIGKILL)
		<-r2.done
		lost := c1.await(id, 2*time.Minute, status("failed", "completed", "cancelled"))
		if lost["status"] != "failed" || !strings.Contains(lost["statusMessage"].(string), "lost") || lost["error"] == nil {
			t.Fatalf("the task of the killed replica: %v", lost)
		}

		// The sandbox removed under a running task: failed, saying so,
		// on the replica that ran it.
		c3 := taskClientOf(t, r1)
		res = c3.call(map[string]any{"code": "import time\nprint('going', flush=True)\ntime.sleep(100)", "timeout": 120})
		id2 := res["taskId"].(string)
		c3.await(id2, time.Minute, func(r map[string]any) bool { m, _ := r["statusMessage"].(string); return strings.Contains(m, "going") })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range containersOf(t, e, r1.pid) {
			// Only the running ones: another of r1's may be on its way
			// out already (the engine refuses a second removal).
			if c.State != "running" {
				continue
			}
			if err := e.(engine.Resumer).RemoveSandbox(ctx, "", c.ID); err != nil && !strings.Contains(err.Error(), "already in progress") {
				t.Fatalf("removing sandbox %s: %v", c.ID, err)
			}
		}
		gone := c3.await(id2, time.Minute, status("failed", "completed", "cancelled"))
		if gone["status"] != "failed" || !strings.Contains(gone["statusMessage"].(string), "sandbox") {
			t.Fatalf("a task whose sandbox was removed: %v", gone)
		}

		// Bad IDs, on every replica alike; a client that does not declare
		// the extension is refused the methods.
		for _, bad := range []string{"gate-test", id + "x", id[:len(id)-4]} {
			if _, e := c1.get(bad); e == nil || e["code"] != float64(-32602) {
				t.Fatalf("tasks/get %q: %v", bad, e)
			}
		}
		plain := taskClientOf(t, r1)
		plain.plain = true
		if msg := plain.rpc("tasks/get", map[string]any{"taskId": id}); msg["error"].(map[string]any)["code"] != float64(-32021) {
			t.Fatalf("a client without the extension: %v", msg)
		}
	})
}

// tsTask is the line integration/node/tasks.mjs prints.
type tsTask struct {
	Mode            string `json:"mode"`
	ProtocolVersion string `json:"protocolVersion"`
	Task            bool   `json:"task"`
	TaskID          string `json:"taskId"`
	Status          string `json:"status"`
	ServerStatus    string `json:"serverStatus"`
	IsError         bool   `json:"isError"`
	Text            string `json:"text"`
	Session         string `json:"session"`
}

// TestTasksTypeScript: the official TypeScript requester of the Tasks
// extension (@modelcontextprotocol/ext-tasks on the SDK v2 client) runs
// run_python as a task and settles it, and cancels one.
func TestTasksTypeScript(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		token := rand.Text()
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_HTTP_TOKEN=" + token, "MCP_BRIDGE_TASK_AFTER=0", "MCP_BRIDGE_POOL_SIZE=1"}})
		run := func(mode string) tsTask {
			cmd := exec.Command("node", filepath.Join(nodeDir(t), "tasks.mjs"), b.url, mode)
			cmd.Env = append(envWithout("MCP_TOKEN"), "MCP_TOKEN="+token)
			cmd.Dir = t.TempDir()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("tasks.mjs %s: %v\nstderr:\n%s", mode, err, stderr.String())
			}
			var out tsTask
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("tasks.mjs output: %v\n%s", err, stdout.String())
			}
			return out
		}
		done := run("complete")
		if !done.Task || done.ProtocolVersion != "2026-07-28" || done.Status != "completed" || done.IsError ||
			!strings.HasSuffix(done.Text, "begun\nended") || !strings.HasPrefix(done.Session, "sb1_") {
			t.Fatalf("a task settled by the TypeScript requester: %+v", done)
		}
		cancelled := run("cancel")
		if !cancelled.Task || cancelled.Status != "cancelled" || cancelled.ServerStatus != "cancelled" {
			t.Fatalf("a task cancelled by the TypeScript requester: %+v", cancelled)
		}
	})
}
