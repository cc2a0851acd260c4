//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestStdioStartsItsSandboxAtOnce checks that a stdio bridge starts its
// one sandbox in the background as it starts, before any call (its
// initialize answer did not wait: launchBridge returned), that the first
// call runs in that very container with no notice of lost state, that it
// starts no second one, and that MCP_BRIDGE_POOL_SIZE=0 starts none
// before the first call.
func TestStdioStartsItsSandboxAtOnce(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		owned := func(pid int) []engine.SandboxInfo { return containersOf(t, e, pid) }
		cs, cmd := connectBridgeCmd(t, e.Name())
		deadline := time.Now().Add(30 * time.Second)
		for len(owned(cmd.Process.Pid)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no sandbox container 30 s after the bridge started (and no call)")
			}
			time.Sleep(100 * time.Millisecond)
		}
		before := owned(cmd.Process.Pid)
		text, isErr := runPython(t, cs, map[string]any{"code": "import os; print('pid1', os.getpid() > 0)"})
		if isErr || text != "pid1 True" {
			t.Fatalf("first call: %q (isError %v), want a plain answer with no notice", text, isErr)
		}
		after := owned(cmd.Process.Pid)
		if len(before) != 1 || len(after) != 1 || before[0].ID != after[0].ID {
			t.Fatalf("containers before the first call %v, after %v: want the one started at once, reused", ids(before), ids(after))
		}

		cs0, cmd0 := connectBridgeCmd(t, e.Name(), "MCP_BRIDGE_POOL_SIZE=0")
		time.Sleep(time.Second)
		if n := len(owned(cmd0.Process.Pid)); n != 0 {
			t.Fatalf("MCP_BRIDGE_POOL_SIZE=0: %d containers before any call, want 0", n)
		}
		if text, isErr := runPython(t, cs0, map[string]any{"code": "print(2)"}); isErr || text != "2" {
			t.Fatalf("MCP_BRIDGE_POOL_SIZE=0: first call %q (isError %v)", text, isErr)
		}
		cs.Close()
		cs0.Close()
		cmd.Wait()
		cmd0.Wait()
		if n := len(owned(cmd.Process.Pid)) + len(owned(cmd0.Process.Pid)); n != 0 {
			t.Fatalf("%d containers left after the bridges exited", n)
		}
	})
}

func ids(l []engine.SandboxInfo) []string {
	var out []string
	for _, s := range l {
		out = append(out, s.ID[:min(12, len(s.ID))])
	}
	return out
}
