package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stubServerEnv makes the test binary serve a stub MCP server on stdio
// instead of running tests, so the bridge proxies a real process.
const stubServerEnv = "MCPBRIDGE_STUB_SERVER"

// stubClientInfoEnv gives the stub server one more tool, client_info,
// which answers with the name and version the client announced.
const stubClientInfoEnv = "MCPBRIDGE_STUB_CLIENT_INFO"

func TestMain(m *testing.M) {
	if os.Getenv(stubServerEnv) == "1" {
		if err := runStubServer(); err != nil {
			fmt.Fprintln(os.Stderr, "stub server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stubStartDelayEnv makes the stub server wait that many milliseconds
// before it serves.
const stubStartDelayEnv = "MCPBRIDGE_STUB_START_DELAY_MS"

// stubSlowEnv gives the stub server two more tools: sleep and pid.
const stubSlowEnv = "MCPBRIDGE_STUB_SLOW"

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

func runStubServer() error {
	if ms, _ := strconv.Atoi(os.Getenv(stubStartDelayEnv)); ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond) // a server slow to start
	}
	if os.Getenv("MCPBRIDGE_STUB_NOISE") == "1" {
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
	if os.Getenv(stubClientInfoEnv) == "1" {
		mcp.AddTool(s, &mcp.Tool{Name: "client_info", Description: "The client's name and version"},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
				info := req.Session.InitializeParams().ClientInfo
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: info.Name + " " + info.Version}}}, nil, nil
			})
	}
	if os.Getenv(stubSlowEnv) == "1" {
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
