//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKubeHandlesAcrossReplicas: on pods, replicas sharing
// MCP_BRIDGE_HANDLE_KEY resume each other's handles through pods/exec; a
// replica killed in a call loses no state, and a sandbox pod outlives a
// graceful stop of the replica that started it.
func TestKubeHandlesAcrossReplicas(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, _ bool) {
		key, token := rand.Text()+rand.Text(), rand.Text()
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1", env...))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2", env...))
		removeResumable(t, e, r1, r2)
		c1, c2 := r1.dialStateless(t, r1.url), r2.dialStateless(t, r2.url)

		text, isErr, h := runIn(t, c1, "", "import socket\nx = 41\nprint(socket.gethostname())", 60)
		if isErr || h == "" {
			t.Fatalf("first call on r1: %v %q (handle %q)", isErr, text, h)
		}
		pod := text[strings.LastIndexByte(text, '\n')+1:]
		pods := containersOf(t, e, r1.pid)
		if len(pods) != 1 || pods[0].ID != pod {
			t.Fatalf("r1's pods %v, want the one the call ran in, %q", pods, pod)
		}
		start := time.Now()
		if text, isErr, again := runIn(t, c2, h, "import socket\nx += 1\nprint(x, socket.gethostname())", 60); isErr || text != "42 "+pod || again != "" {
			t.Fatalf("the handle on r2: %v %q", isErr, text)
		}
		t.Logf("r2 resumed the handle's pod in %v (first call)", time.Since(start).Round(time.Millisecond))

		// r2 killed in the middle of a call: the pod lives on, and r1
		// goes on with the state.
		killed := make(chan error, 1)
		go func() {
			_, err := c2.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
				"code": "import time\nfor _ in range(600):\n    time.sleep(0.1)", "timeout": 120, "session": h}})
			killed <- err
		}()
		time.Sleep(2 * time.Second)
		r2.cmd.Process.Signal(syscall.SIGKILL)
		<-r2.done
		if err := <-killed; err == nil {
			t.Fatal("the call through the killed replica answered")
		}
		if text, isErr, _ := runIn(t, c1, h, "print(x)", 90); isErr || text != "42" {
			t.Fatalf("after r2 was killed in a call: %v %q", isErr, text)
		}

		// r1 stopped gracefully: the pod runs on, and r3 resumes it.
		r1.cleanup()
		r3 := startHTTPBridge(t, e, replicaEnv(key, token, "r3", env...))
		removeResumable(t, e, r3)
		if text, isErr, _ := runIn(t, r3.dialStateless(t, r3.url), h, "x += 1\nprint(x)", 90); isErr || text != "43" {
			t.Fatalf("on r3 after r1 stopped: %v %q", isErr, text)
		}
	})
}
