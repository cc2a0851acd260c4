package tasks

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTaskTable: the tasks a sandbox and the bridge keep are bounded,
// with errors naming the settings; a task ends its time to live counted
// from its end, and the sweep forgets it, as does adding a task while it
// is not yet swept.
func TestTaskTable(t *testing.T) {
	status := func(*mcp.CallToolResult) string { return "success" }
	mk := func(id, owner string, ttl time.Duration) *Task {
		tk := newTask(time.Second, ttl, status)
		tk.id, tk.owner = id, owner
		return tk
	}
	const maxTasks, perSandbox = 3, 2
	var tt taskTable
	a, b, c := mk("a", "s1", time.Millisecond), mk("b", "s1", time.Millisecond), mk("c", "s2", time.Hour)
	for _, tk := range []*Task{a, b} {
		if err := tt.add(tk, maxTasks, perSandbox); err != nil {
			t.Fatal(err)
		}
	}
	if err := tt.add(mk("x", "s1", time.Hour), maxTasks, perSandbox); err == nil || !strings.Contains(err.Error(), "MCP_BRIDGE_MAX_TASKS_PER_SANDBOX") {
		t.Fatalf("a third task of one sandbox: %v", err)
	}
	if err := tt.add(c, maxTasks, perSandbox); err != nil {
		t.Fatal(err)
	}
	if err := tt.add(mk("d", "s3", time.Hour), maxTasks, perSandbox); err == nil || !strings.Contains(err.Error(), "MCP_BRIDGE_MAX_TASKS") {
		t.Fatalf("a fourth task of the bridge: %v", err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	if a.expired(time.Now().Add(time.Hour)) {
		t.Error("a running task expired")
	}
	for _, tk := range []*Task{a, b, c} {
		tk.end(res)
	}
	now := time.Now().Add(time.Second)
	if !a.expired(now) || !b.expired(now) || c.expired(now) {
		t.Fatalf("expired a %v, b %v, c %v; want a and b only", a.expired(now), b.expired(now), c.expired(now))
	}
	if v := a.view(); v.Status != taskCompleted || v.Message != "the call ended: success" {
		t.Errorf("an ended task shows %s: %q", v.Status, v.Message)
	}
	if n := tt.sweep(now); n != 2 || len(tt.all()) != 1 || tt.get("c") != c {
		t.Fatalf("the sweep forgot %d tasks, %d left; want 2, and c left", n, len(tt.all()))
	}
	e := mk("e", "s4", time.Millisecond)
	for _, tk := range []*Task{mk("d", "s3", time.Hour), e} {
		if err := tt.add(tk, maxTasks, perSandbox); err != nil {
			t.Fatal(err)
		}
	}
	e.end(res)
	time.Sleep(5 * time.Millisecond)
	if err := tt.add(mk("f", "s4", time.Hour), maxTasks, perSandbox); err != nil || tt.get("e") != nil {
		t.Fatalf("adding to a bridge full of tasks one of which expired: %v (the expired one kept: %v)", err, tt.get("e") != nil)
	}
}
