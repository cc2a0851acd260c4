// Package stubserver is a stub MCP server for the tests of the packages
// that proxy servers: a test binary whose TestMain calls Main serves it on
// stdio when its environment says so (ServerEnv), so that the bridge
// proxies a real process.
package stubserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerEnv makes the test binary serve a stub MCP server on stdio
// instead of running tests, so the bridge proxies a real process.
const ServerEnv = "MCPBRIDGE_STUB_SERVER"

// ClientInfoEnv gives the stub server one more tool, client_info, which
// answers with the name and version the client announced.
const ClientInfoEnv = "MCPBRIDGE_STUB_CLIENT_INFO"

// StartDelayEnv makes the stub server wait that many milliseconds before
// it serves.
const StartDelayEnv = "MCPBRIDGE_STUB_START_DELAY_MS"

// SlowEnv gives the stub server two more tools: sleep and pid.
const SlowEnv = "MCPBRIDGE_STUB_SLOW"

// NoiseEnv makes the stub server write a banner and blank lines among
// its messages on stdout.
const NoiseEnv = "MCPBRIDGE_STUB_NOISE"

// Main serves the stub server and exits, when ServerEnv is "1" in the
// environment; else it returns at once. A TestMain calls it first.
func Main() {
	if os.Getenv(ServerEnv) != "1" {
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stub server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type sleepIn struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

type addIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

type readIn struct {
	Path string `json:"path" jsonschema:"path of the file to read"`
}

func run() error {
	if ms, _ := strconv.Atoi(os.Getenv(StartDelayEnv)); ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond) // a server slow to start
	}
	if os.Getenv(NoiseEnv) == "1" {
		// A chatty server: a banner and blank lines among its messages.
		fmt.Println("stub server starting, have fun")
		fmt.Println()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "stub", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the provided message"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get-sum", Description: "Add two numbers and return their sum"},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_text_file", Description: "Read the complete contents of a file as text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("no such file: " + in.Path)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server process"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	if os.Getenv(ClientInfoEnv) == "1" {
		mcp.AddTool(s, &mcp.Tool{Name: "client_info", Description: "The client's name and version"},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
				info := req.Session.InitializeParams().ClientInfo
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: info.Name + " " + info.Version}}}, nil, nil
			})
	}
	if os.Getenv(SlowEnv) == "1" {
		mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Answer after ms milliseconds, or when cancelled"},
			func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
				select {
				case <-time.After(time.Duration(in.MS) * time.Millisecond):
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			})
		mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server process's id"},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
			})
	}
	return s.Run(context.Background(), &mcp.StdioTransport{})
}
