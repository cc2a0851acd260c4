//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// apiServerPidFile is where scripts/provision-kubernetes keeps the pid of
// the cluster's API server.
const apiServerPidFile = "/run/mcp-bridge-k8s/kube-apiserver.pid"

// restartAPIServer kills the cluster's API server and has
// scripts/provision-kubernetes start it again; it returns once the API
// server answers, and how long it was away.
func restartAPIServer(t *testing.T) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(apiServerPidFile)
	if err != nil {
		t.Fatalf("the API server's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the API server's pid %q: %v", raw, err)
	}
	began := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the API server: %v", err)
	}
	for syscall.Kill(pid, 0) == nil && time.Since(began) < 30*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	cmd := exec.Command("bash", "../scripts/provision-kubernetes")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting the API server again: %v\n%s", err, out)
	}
	return time.Since(began)
}

// TestKubeAPIServerRestarted: the API server, through which the bridge is
// attached to its pods, killed in the middle of a call and started again:
// the call fails with an error saying the connection was lost and the
// state kept, the bridge attaches again (and reads what the runtime wrote
// to its diagnostics meanwhile from the pod's log), and the next call
// finds the session's state in the same pod. (Not parallel: it stops the API
// server other tests use.)
func TestKubeAPIServerRestarted(t *testing.T) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_LOG_LEVEL=DEBUG"}})
	cs := b.session(t, nil)
	if text, isErr := callText(cs, "x = 42\nprint('set')"); isErr || text != "set" {
		t.Fatalf("first call: %v %q", isErr, text)
	}

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	cut := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "import time, mcp_sandbox_channel\nfor i in range(600):\n    print('tick', i, flush=True)\n" +
				"    mcp_sandbox_channel.log('diag-tick %d;' % i)\n    time.sleep(0.1)", "timeout": 120}})
		cut <- answer{res, err}
	}()
	time.Sleep(2 * time.Second)
	away := restartAPIServer(t)
	t.Logf("the API server was away for %v", away)

	back := time.Now()
	a := <-cut
	t.Logf("the cut-off call answered %v after the API server was back", time.Since(back))
	if a.err != nil || !a.res.IsError {
		t.Fatalf("the call cut off by the restart: %v %+v", a.err, a.res)
	}
	text := a.res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "the connection to the sandbox was lost during the call") || !strings.Contains(text, "state are kept") || !strings.Contains(text, "tick 0") {
		t.Fatalf("the call cut off by the restart: %q", text)
	}
	// The runtime's diagnostics of the outage, written while no stream
	// was attached, were read from the pod's log: one a quarter into it
	// at ten ticks a second, which a loaded machine (ticks late) still
	// writes before the outage ends.
	ticks := regexp.MustCompile(`tick (\d+)`).FindAllStringSubmatch(text, -1)
	last, _ := strconv.Atoi(ticks[len(ticks)-1][1])
	mid := fmt.Sprintf("diag-tick %d;", last+int(away.Seconds()*10/4))
	if !strings.Contains(b.log.String(), mid) {
		t.Fatalf("the bridge's log lacks %q, written while the stream was lost (the last tick before it: %d)", mid, last)
	}
	began := time.Now()
	if text, isErr := callText(cs, "x += 1\nprint(x)"); isErr || text != "43" {
		t.Fatalf("the call after the restart: %v %q", isErr, text)
	}
	t.Logf("the next call answered in %v", time.Since(began))
	if pods := b.containers(t); len(pods) != 1 {
		t.Fatalf("%d pods after the restart, want the one", len(pods))
	}
}
