//go:build integration

package integration

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"
)

// tasksPerOp is how many calls of each kind one op of item 17 makes.
const tasksPerOp = 10

// BenchmarkTasks is item 17: run_python as a task of the Tasks
// extension on two `serve -http` replicas sharing MCP_BRIDGE_HANDLE_KEY
// (MCP_BRIDGE_TASK_AFTER=0), through raw JSON-RPC over HTTP alike for
// plain calls and tasks. A plain call (a client that does not declare
// the extension) against a task of the same code polled every 5 ms
// until it ended, on the same replica; and the time from a task's end
// (its lastUpdatedAt) to a poll that sees it, on the replica that runs it
// (memory) and on the other (the task's record in the sandbox).
func BenchmarkTasks(b *testing.B) {
	sec := report.section("17", "Tasks: the overhead of a task against a plain call, and from a task's end to a poll that sees it",
		"variant", "plain call: p50", "p99", "task alone (no shared key), created to seen ended: p50", "p99", "its tools/call: p50",
		"task with a shared key, created to seen ended: p50", "p99", "its tools/call: p50",
		"end to seen, same replica: p50", "p99", "end to seen, other replica: p50", "p99")
	sec.note("Two replicas of one binary sharing the handle key, every call of a declaring client a task (`MCP_BRIDGE_TASK_AFTER=0`), "+
		"raw JSON-RPC on protocol 2026-07-28 for both kinds, all in one sandbox behind a handle (`print(x)`). Per op %d plain calls, "+
		"%d tasks polled every 5 ms on the replica that runs them, %d tasks of `time.sleep(0.3)` polled every 5 ms on the other replica "+
		"(tasks kept 1 s, `MCP_BRIDGE_TASK_TTL=1`, as a sandbox keeps at most 16). "+
		"End to seen: the poll's arrival minus the task's lastUpdatedAt (one clock). A third replica, alone and without a shared key, "+
		"answers %d tasks per op in the same way: its tasks have no record in the sandbox.", tasksPerOp, tasksPerOp, tasksPerOp, tasksPerOp)
	forEachVariant(b, func(b *testing.B, v variant) {
		e := connect(b, v.engine)
		key, token := rand.Text()+rand.Text(), rand.Text()
		env := func(name string) httpOpts {
			return replicaEnv(key, token, name, "MCP_BRIDGE_TASK_AFTER=0", "MCP_BRIDGE_TASK_TTL=1", "MCP_BRIDGE_OCI_RUNTIME="+v.oci)
		}
		r1, r2 := startHTTPBridge(b, e, env("r1")), startHTTPBridge(b, e, env("r2"))
		removeResumable(b, e, r1, r2)
		c1, c2 := taskClientOf(b, r1), taskClientOf(b, r2)
		// A replica alone, without a shared key: its tasks live in its
		// memory, with no record in the sandbox.
		r0 := startHTTPBridge(b, e, httpOpts{env: []string{"MCP_BRIDGE_HTTP_TOKEN=" + token, "MCP_BRIDGE_TASK_AFTER=0", "MCP_BRIDGE_TASK_TTL=1",
			"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_OCI_RUNTIME=" + v.oci}})
		c0 := taskClientOf(b, r0)
		plain := taskClientOf(b, r1)
		plain.plain = true
		res := plain.call(map[string]any{"code": "x = 1"})
		h, _ := res["structuredContent"].(map[string]any)["session"].(string)
		if h == "" {
			b.Fatalf("the first call minted no handle: %v", res)
		}
		// poll polls id on c every 5 ms until it ended; it returns when it
		// saw it end, and the task.
		poll := func(c *taskClient, id string) (time.Time, map[string]any) {
			for {
				res, e := c.get(id)
				if e != nil {
					b.Fatalf("tasks/get: %v", e)
				}
				if res["status"] != "working" && res["status"] != "input_required" {
					return time.Now(), res
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		endToSeen := func(seen time.Time, res map[string]any) time.Duration {
			if res["status"] != "completed" {
				b.Fatalf("the task ended %v: %v", res["status"], res)
			}
			ended, err := time.Parse(time.RFC3339Nano, res["lastUpdatedAt"].(string))
			if err != nil {
				b.Fatal(err)
			}
			return seen.Sub(ended)
		}
		first := c0.call(map[string]any{"code": "x = 1"})
		h0, _ := c0.await(first["taskId"].(string), time.Minute, status("completed"))["result"].(map[string]any)["structuredContent"].(map[string]any)["session"].(string)
		var plains, tasks, creates, alone, aloneTasks, local, remote []time.Duration
		for b.Loop() {
			b.StopTimer()
			time.Sleep(1100 * time.Millisecond)
			b.StartTimer()
			for range tasksPerOp {
				began := time.Now()
				res := plain.call(map[string]any{"code": "print(x)", "session": h})
				plains = append(plains, time.Since(began))
				if res["resultType"] == "task" || !strings.HasSuffix(taskTextOf(res), "1") {
					b.Fatalf("a plain call: %v", res)
				}
			}
			for range tasksPerOp {
				began := time.Now()
				res := c1.call(map[string]any{"code": "print(x)", "session": h})
				creates = append(creates, time.Since(began))
				seen, done := poll(c1, res["taskId"].(string))
				tasks = append(tasks, seen.Sub(began))
				local = append(local, endToSeen(seen, done))
			}
			for range tasksPerOp {
				began := time.Now()
				res := c0.call(map[string]any{"code": "print(x)", "session": h0})
				alone = append(alone, time.Since(began))
				seen, _ := poll(c0, res["taskId"].(string))
				aloneTasks = append(aloneTasks, seen.Sub(began))
			}
			// The tasks of the sandbox so far expire (a sandbox keeps at
			// most 16; their time to live is 1 s here).
			b.StopTimer()
			time.Sleep(1100 * time.Millisecond)
			b.StartTimer()
			for range tasksPerOp {
				res := c1.call(map[string]any{"code": "import time\ntime.sleep(0.3)", "session": h})
				seen, done := poll(c2, res["taskId"].(string))
				remote = append(remote, endToSeen(seen, done))
			}
		}
		p, t, c, a, at, l, r := summarize(plains), summarize(tasks), summarize(creates), summarize(alone), summarize(aloneTasks), summarize(local), summarize(remote)
		b.ReportMetric(float64(p.p50.Microseconds())/1000, "plain-p50-ms")
		b.ReportMetric(float64(t.p50.Microseconds())/1000, "task-p50-ms")
		sec.row(v.label, v.label, ms(p.p50), ms(p.p99), ms(at.p50), ms(at.p99), ms(a.p50), ms(t.p50), ms(t.p99), ms(c.p50), ms(l.p50), ms(l.p99), ms(r.p50), ms(r.p99))
	})
}

// taskTextOf returns the text of a plain CallToolResult.
func taskTextOf(res map[string]any) string {
	return taskText(map[string]any{"result": res})
}
