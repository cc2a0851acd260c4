//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// bridgeContainers returns the IDs of the containers of bridge pid.
func bridgeContainers(t *testing.T, e testEngine, pid int) []string {
	t.Helper()
	var ids []string
	for _, s := range list(t, e) {
		if s.Labels[engine.LabelPID] == strconv.Itoa(pid) {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// callAsync starts a run_python call and returns a channel with its text
// and isError.
func callAsync(cs *mcp.ClientSession, args map[string]any) <-chan [2]any {
	out := make(chan [2]any, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: args})
		if err != nil {
			out <- [2]any{"client error: " + err.Error(), true}
			return
		}
		out <- [2]any{res.Content[0].(*mcp.TextContent).Text, res.IsError}
	}()
	return out
}

// TestFaultContainerKilledDuringCall kills the session's container from
// outside while a call runs: the call gets a clear error, the next call a
// fresh session with a notice.
func TestFaultContainerKilledDuringCall(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs, cmd := connectBridgeCmd(t, e.Name())
		runPython(t, cs, map[string]any{"code": "kept = 1"})
		done := callAsync(cs, map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(60)", "timeout": 100})
		ids := bridgeContainers(t, e, cmd.Process.Pid)
		if len(ids) != 1 {
			t.Fatalf("containers of the bridge: %v", ids)
		}
		time.Sleep(time.Second)
		if out, err := exec.Command(e.Name(), "kill", ids[0]).CombinedOutput(); err != nil {
			t.Fatalf("%s kill: %v %s", e.Name(), err, out)
		}
		var r [2]any
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the call did not end when its container was killed")
		}
		if text := r[0].(string); !r[1].(bool) || !strings.Contains(text, "sandbox died") || !strings.Contains(text, "signal") {
			t.Errorf("the killed call: %q, want an error saying the sandbox died by a signal", text)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print('kept' in globals())"}})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		sc, _ := res.StructuredContent.(map[string]any)
		if res.IsError || !strings.Contains(text, "False") || sc["notice"] == nil {
			t.Errorf("the next call: %q structured %v, want a fresh session with a notice", text, sc)
		}
	})
}

// TestFaultProxiedServerHangsOrDies makes a proxied server busy past the
// call's timeout (the call times out, the server is restarted) and kills a
// proxied server mid-call (a clear MCPError); the next calls work.
func TestFaultProxiedServerHangsOrDies(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		cs, cmd := connectBridgeCmd(t, e.Name(), "HOME="+home)
		load := map[string]any{"servers": []string{"everything"}, "code": "print(await mcp_everything.echo(message='up'))"}
		if text, isErr := runPython(t, cs, load); isErr {
			t.Fatalf("loading: %s", text)
		}
		text, isErr := runPython(t, cs, map[string]any{"timeout": 2,
			"code": "await mcp_everything.trigger_long_running_operation(duration=60, steps=2)"})
		if !isErr || !strings.Contains(text, "status: timeout") {
			t.Errorf("a call waiting on a busy server: %q, want a timeout", text)
		}
		if text, isErr := runPython(t, cs, load); isErr || !strings.Contains(text, "up") {
			t.Errorf("after the timeout: %q", text)
		}

		done := callAsync(cs, map[string]any{"timeout": 60, "code": "try:\n" +
			"    await mcp_everything.trigger_long_running_operation(duration=30, steps=2)\n" +
			"except MCPError as e:\n    print('MCPError:', e)"})
		time.Sleep(2 * time.Second)
		out, _ := exec.Command("pkill", "-KILL", "-P", strconv.Itoa(cmd.Process.Pid), "-f", "everything").CombinedOutput()
		var r [2]any
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the call did not end when its server died (pkill: %s)", out)
		}
		if text := r[0].(string); r[1].(bool) || !strings.Contains(text, "MCPError:") || !strings.Contains(text, "restarted") {
			t.Errorf("a call whose server died: %q, want a catchable MCPError saying it is restarted", text)
		}
		if text, isErr := runPython(t, cs, load); isErr || !strings.Contains(text, "up") {
			t.Errorf("after the server died: %q", text)
		}
	})
}

// TestFaultBridgeStopped stops a bridge with SIGTERM (its container is
// removed) and another with SIGKILL (its container is removed as an orphan
// when the next bridge starts its first session).
func TestFaultBridgeStopped(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs, cmd := connectBridgeCmd(t, e.Name())
		runPython(t, cs, map[string]any{"code": "print(1)"})
		pid := cmd.Process.Pid
		if n := len(bridgeContainers(t, e, pid)); n != 1 {
			t.Fatalf("%d containers", n)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		eventually(t, "SIGTERM removes the bridge's container", func() bool { return len(bridgeContainers(t, e, pid)) == 0 })

		cs, cmd = connectBridgeCmd(t, e.Name())
		runPython(t, cs, map[string]any{"code": "print(1)"})
		pid = cmd.Process.Pid
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if n := len(bridgeContainers(t, e, pid)); n != 1 {
			t.Fatalf("after SIGKILL: %d containers of the killed bridge, want its 1 orphan", n)
		}
		cs2 := connectBridge(t, e.Name())
		runPython(t, cs2, map[string]any{"code": "print(1)"})
		eventually(t, "the next bridge removes the orphan", func() bool { return len(bridgeContainers(t, e, pid)) == 0 })
	})
}

// TestFaultClientGoneMidCall closes the client while a call runs: the
// bridge ends and its container is removed.
func TestFaultClientGoneMidCall(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs, cmd := connectBridgeCmd(t, e.Name())
		runPython(t, cs, map[string]any{"code": "print(1)"})
		callAsync(cs, map[string]any{"code": "import time\ntime.sleep(60)", "timeout": 100})
		time.Sleep(time.Second)
		cs.Close()
		pid := cmd.Process.Pid
		eventually(t, "the bridge's container is removed", func() bool { return len(bridgeContainers(t, e, pid)) == 0 })
		eventually(t, "the bridge exits", func() bool { return syscall.Kill(pid, 0) != nil || processGone(pid) })
	})
}

// processGone reports whether pid is a zombie or gone.
func processGone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] == "Z"
}

// TestFaultProxiedServerPrintsGarbage proxies real servers behind a
// wrapper that writes garbage on their stdout (integration/node/garbage.mjs):
// text, invalid UTF-8, broken and non-JSON-RPC JSON, forged responses and
// unknown notifications between the real messages leave every call
// working; a line over the limit fails the call in flight with a clear,
// catchable error, and the restarted server serves the next call.
func TestFaultProxiedServerPrintsGarbage(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		dir := nodeDir(t)
		everything := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
		wrapped := func(mode string) map[string]any {
			return map[string]any{"command": "node", "args": []string{filepath.Join(dir, "garbage.mjs"), mode, everything}}
		}
		home := t.TempDir()
		cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"noisy": wrapped("noise"), "jsonjunk": wrapped("json"), "huge": wrapped("huge"),
		}})
		os.MkdirAll(filepath.Join(home, "MCPs"), 0o755)
		if err := os.WriteFile(filepath.Join(home, "MCPs", "servers.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		cs, cmd := connectBridgeCmd(t, e.Name(), "HOME="+home)
		text, isErr := runPython(t, cs, map[string]any{"servers": []string{"noisy", "jsonjunk", "huge"}, "code": `kept = 7
for i in range(5):
    print(await mcp_noisy.echo(message="n%d" % i))
    print(await mcp_jsonjunk.echo(message="j%d" % i))
    print(await mcp_jsonjunk.get_sum(a=i, b=1))
from mcp import runtime
print(sorted(runtime.list_loaded_server_metadata()[i]["name"] for i in range(3)))`})
		for _, want := range []string{"Echo: n0", "Echo: n4", "Echo: j0", "Echo: j4", "The sum of 4 and 1 is 5.", "['huge', 'jsonjunk', 'noisy']"} {
			if isErr || !strings.Contains(text, want) {
				t.Errorf("calls through servers writing garbage: %q lacks %q", text, want)
			}
		}
		text, isErr = runPython(t, cs, map[string]any{"servers": []string{"huge"}, "code": `print(await mcp_huge.echo(message="before"))
try:
    await mcp_huge.echo(message="huge-please")
    print("NO ERROR")
except MCPError as e:
    print("MCPError:", e)
print(await mcp_huge.echo(message="after"))
print(kept)`})
		t.Logf("a 40 MiB line: %.400q", text)
		if isErr || !strings.Contains(text, "Echo: before") || !strings.Contains(text, "MCPError:") || !strings.Contains(text, "Echo: after") || !strings.HasSuffix(text, "7") {
			t.Errorf("a server writing a line over the limit: %q, want a caught MCPError, the server back for the next call and the state kept", text)
		}
		if processGone(cmd.Process.Pid) {
			t.Fatal("the bridge exited")
		}
	})
}
