//go:build integration

package integration

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"
)

// ctlTamperCode is a task's code that keeps another replica's ctl from
// reaching the replica running it: every 10 ms it deletes each task's
// ctl (deleting) or puts back the first one it saw (rolling back), for
// two minutes, then says it finished.
const ctlTamperCode = `import glob, os, time
mode = %q
saved = {}
print("tampering", flush=True)
end = time.time() + 120
while time.time() < end:
    for p in glob.glob("/workspace/out/.mcp-tasks/*/ctl"):
        try:
            data = open(p, "rb").read()
            if mode == "delete":
                os.remove(p)
            elif p not in saved:
                saved[p] = data
            elif data != saved[p]:
                with open(p, "wb") as f:
                    f.write(saved[p])
        except OSError:
            pass
    time.sleep(0.01)
print("finished")`

// TestTaskControlTampering: a task whose code deletes, or rolls back,
// its ctl while another replica cancels it is stopped all the same: the
// replica that wrote the cancellation sees no acknowledgement within two
// beats, logs the tampering and cancels the call through the engine;
// the handle's sandbox keeps working. On bb2658b the cancellation was
// lost and the code ran its two minutes to "finished".
func TestTaskControlTampering(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		key, token := rand.Text()+rand.Text(), rand.Text()
		env := []string{"MCP_BRIDGE_TASK_AFTER=0"}
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1", env...))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2", env...))
		removeResumable(t, e, r1, r2)
		c1, c2 := taskClientOf(t, r1), taskClientOf(t, r2)

		res := c1.call(map[string]any{"code": "x = 1\nprint('ready')", "timeout": 60})
		first, _ := res["taskId"].(string)
		done := c1.await(first, time.Minute, status("completed", "failed", "cancelled"))
		sc, _ := done["result"].(map[string]any)["structuredContent"].(map[string]any)
		h, _ := sc["session"].(string)
		if h == "" {
			t.Fatalf("the first task: %v", done)
		}

		for _, mode := range []string{"rollback", "delete"} {
			res := c1.call(map[string]any{"session": h, "code": strings.Replace(ctlTamperCode, "%q", `"`+mode+`"`, 1), "timeout": 180})
			id, _ := res["taskId"].(string)
			c2.await(id, time.Minute, func(r map[string]any) bool {
				m, _ := r["statusMessage"].(string)
				return strings.Contains(m, "tampering")
			})
			if mode == "rollback" {
				// A first ctl, applied, which the code keeps putting back.
				c2.rpc("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"none-1": map[string]any{"action": "accept"}}})
				time.Sleep(3 * time.Second)
			}
			began := time.Now()
			if msg := c2.rpc("tasks/cancel", map[string]any{"taskId": id}); msg["result"] == nil {
				t.Fatalf("%s: tasks/cancel through r2: %v", mode, msg)
			}
			ended := c2.await(id, 90*time.Second, status("completed", "failed", "cancelled"))
			took := time.Since(began)
			t.Logf("%s: the task ended %s %v after the cancel: %.200q", mode, ended["status"], took, taskText(ended))
			if strings.Contains(taskText(ended), "finished") || took > time.Minute {
				t.Errorf("%s: the tampering code was not stopped: %v", mode, ended)
			}
		}
		if !strings.Contains(r2.log.String(), "suppressed what another replica brought it") {
			t.Errorf("r2 did not log the tampering")
		}
		res = c2.call(map[string]any{"session": h, "code": "print(x)", "timeout": 60})
		if again, _ := res["taskId"].(string); again == "" {
			t.Fatalf("a call after: %v", res)
		} else if done := c2.await(again, time.Minute, status("completed", "failed", "cancelled")); taskText(done) != "1" {
			t.Errorf("the handle's state after the forced cancels: %v", done)
		}
	})
}
