//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// floorServerEnv, set to 1, makes the test binary an MCP server over
// stdio instead of running tests: the floor of item 1c's path (f).
const floorServerEnv = "MCP_BENCH_FLOOR_SERVER"

// A floorArgs is run_python's input as the floor server takes it.
type floorArgs struct {
	Code string `json:"code"`
}

// serveFloor runs, when the process was started as the floor server, a
// go-sdk server whose run_python answers "1\n" at once, with no sandbox
// behind it, and reports that it did. It is what an MCP server costs on
// this machine before it does anything: go-sdk's decoding, validation and
// dispatch at both ends and the process hop over stdio.
func serveFloor() bool {
	if os.Getenv(floorServerEnv) != "1" {
		return false
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "run_python", Description: "answers at once"},
		func(context.Context, *mcp.CallToolRequest, floorArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "1\n"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Stderr.WriteString("floor server: " + err.Error() + "\n")
	}
	return true
}

// connectFloor starts this test binary as the floor server and connects a
// client to it; both end with tb.
func connectFloor(tb testing.TB) *mcp.ClientSession {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), floorServerEnv+"=1")
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		tb.Fatalf("starting the floor server: %v", err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}
