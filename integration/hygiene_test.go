//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// fdKinds summarizes what this process's descriptors point at.
func fdKinds() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	kinds := map[string]int{}
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		kind, _, _ := strings.Cut(target, ":")
		if strings.HasPrefix(target, "/") {
			kind = target
		}
		kinds[kind]++
	}
	return fmt.Sprint(kinds)
}

// ownContainers counts the containers this test process's bridges own.
func ownContainers(t *testing.T, e testEngine) int {
	t.Helper()
	return len(containersOf(t, e, os.Getpid()))
}

// TestHygieneAfterManyCallsAndReplacements runs a bridge in this process
// on each engine for 1,000 calls and 50 session replacements, closes it,
// and checks that it left no container, goroutine or file descriptor.
// The engines run one after the other: goroutines are counted process-wide.
func TestHygieneAfterManyCallsAndReplacements(t *testing.T) {
	for _, name := range engineNames() {
		t.Run(name, func(t *testing.T) {
			e := connect(t, name)
			list(t, e) // the engine client's connection pool is warm
			if n := ownContainers(t, e); n != 0 {
				t.Fatalf("%d containers of this process before the test", n)
			}
			fds := openFDs(t)
			ignore := goleak.IgnoreCurrent()

			reg := discovery.NewRegistry(discovery.Options{Home: t.TempDir(), Cwd: t.TempDir()})
			opts := settings(t).Bridge
			opts.Registry, opts.Logger = reg, testLogger()
			opts.PoolSize = 0 // one client: no spares (TestHygieneOverHTTP has a pool)
			br := mcpbridge.New(e, &opts)
			st, ct := mcp.NewInMemoryTransports()
			ctx := context.Background()
			ss, err := br.Server().Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "hygiene", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			call := func(code string) (string, bool) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
				if err != nil {
					t.Fatal(err)
				}
				return res.Content[0].(*mcp.TextContent).Text, res.IsError
			}
			call("n = 0")
			for range 1000 {
				if text, isErr := call("n += 1"); isErr {
					t.Fatalf("call: %s", text)
				}
			}
			if text, _ := call("print(n)"); text != "1000" {
				t.Fatalf("after 1,000 calls: %q", text)
			}
			for i := range 50 {
				if text, isErr := call("import os\nos._exit(3)"); !isErr {
					t.Fatalf("replacement %d: the sandbox's exit was not an error: %q", i, text)
				}
				if text, isErr := call("print('fresh')"); isErr || !strings.Contains(text, "fresh") {
					t.Fatalf("after replacement %d: %q", i, text)
				}
			}
			if n := ownContainers(t, e); n != 1 {
				t.Errorf("%d containers while the client is connected, want 1", n)
			}
			cs.Close()
			ss.Wait()
			if err := br.Close(); err != nil {
				t.Errorf("closing the bridge: %v", err)
			}

			deadline := time.Now().Add(30 * time.Second)
			for ownContainers(t, e) != 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if n := ownContainers(t, e); n != 0 {
				t.Errorf("%d containers left after the bridge closed", n)
			}
			// The engine client may keep up to two idle keep-alive
			// connections (net/http's default per host), each a
			// descriptor and two goroutines.
			goleak.VerifyNone(t, ignore,
				goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
				goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
			if now := openFDs(t); now > fds+2 {
				t.Errorf("%d file descriptors open after the run, %d before: %s", now, fds, fdKinds())
			}
		})
	}
}
