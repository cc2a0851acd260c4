//go:build integration

package integration

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectBridge starts the built binary's stdio MCP server on engine name
// and connects an MCP client to it.
func connectBridge(t testing.TB, name string, env ...string) *mcp.ClientSession {
	cs, _ := connectBridgeCmd(t, name, env...)
	return cs
}

// connectBridgeCmd is connectBridge, also returning the bridge's process.
func connectBridgeCmd(t testing.TB, name string, env ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cs, cmd, _ := launchBridge(t, append([]string{"MCP_BRIDGE_RUNTIME=" + name, "MCP_BRIDGE_LOG_LEVEL=WARN"}, env...), nil, nil)
	return cs, cmd
}

// launchBridge starts the built binary with env added to the process
// environment (later entries win) and its stderr to stderr (nil: the
// test's), connects an MCP client with copts (nil: none), and returns the
// time from the process start to the initialize answer.
func launchBridge(t testing.TB, env []string, stderr io.Writer, copts *mcp.ClientOptions) (*mcp.ClientSession, *exec.Cmd, time.Duration) {
	t.Helper()
	cmd := exec.Command(binary(t), "run")
	cmd.Env = append(envWithout("MCP_BRIDGE_RUNTIME"), env...)
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Cleanup(func() { cs.Close() })
	return cs, cmd, took
}

func runPython(t testing.TB, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestBridgeOverStdio(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs := connectBridge(t, e.Name())
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "run_python" {
			t.Fatalf("tools/list: %+v %v", tools, err)
		}
		if text, isErr := runPython(t, cs, map[string]any{"code": "import os\nstate = os.getuid()\nprint(state)"}); isErr || text != "65534" {
			t.Fatalf("first call: %q %v", text, isErr)
		}
		if text, isErr := runPython(t, cs, map[string]any{"code": "print(state + 1)"}); isErr || text != "65535" {
			t.Fatalf("state across calls: %q %v", text, isErr)
		}
		text, isErr := runPython(t, cs, map[string]any{"code": "while True: pass", "timeout": 1})
		if !isErr || !strings.Contains(text, "status: timeout") {
			t.Fatalf("timeout: %q", text)
		}
		if text, _ := runPython(t, cs, map[string]any{"code": "print(state)"}); text != "65534" {
			t.Fatalf("state after the timeout: %q", text)
		}
		if text, isErr := runPython(t, cs, map[string]any{"code": ""}); !isErr || !strings.Contains(text, "Missing 'code' argument") {
			t.Fatalf("validation: %q", text)
		}
	})
}

// TestBridgeRemovesContainersOnDisconnect checks that closing the client
// ends the bridge and removes its sandbox container.
func TestBridgeRemovesContainersOnDisconnect(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cs, cmd := connectBridgeCmd(t, e.Name())
		pid := cmd.Process.Pid
		owned := func() int { return len(containersOf(t, e, pid)) }
		runPython(t, cs, map[string]any{"code": "print(1)"})
		if n := owned(); n != 1 {
			t.Fatalf("%d containers of bridge %d while its client is connected, want 1", n, pid)
		}
		cs.Close()
		deadline := time.Now().Add(30 * time.Second)
		for owned() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the sandbox container of bridge %d outlived its client", pid)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
