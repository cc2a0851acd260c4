package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// An rpcRequest is what sandbox code sends through the runtime's rpc:
// the sandbox API's requests (sandbox_api.py), told apart by Type.
type rpcRequest struct {
	Type   string `json:"type"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are a call_tool's, decoded only once the type, the
	// server and the tool are checked (callArguments).
	Arguments json.RawMessage `json:"arguments"`
	// Line is the line of the run_python code a call_tool comes from,
	// when the sandbox API found it (shown with a confirmation only).
	Line   int    `json:"line"`
	Query  string `json:"query"`
	Limit  int    `json:"limit"`
	Detail string `json:"detail"`
	// memory and save_tool
	Op       string          `json:"op"`
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Metadata json.RawMessage `json:"metadata"`
	Name     string          `json:"name"`
	Source   string          `json:"source"`
	// install
	Requirements []string `json:"requirements"`
	HaveWheel    bool     `json:"have_wheel"`
	ImagePip     bool     `json:"image_pip"`
}

// rpcHandler answers the sandbox of the client session cs.
func (b *Bridge) rpcHandler(cs *clientSession) func(context.Context, json.RawMessage) (any, error) {
	state, proxies := cs.state, cs.servers
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		ctx = withEvents(ctx, cs.events)
		var req rpcRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("malformed request: %v", err)
		}
		switch req.Type {
		case "list_servers":
			names := state.servers()
			sort.Strings(names)
			return map[string]any{"servers": names}, nil
		case "discovered_servers":
			servers, err := b.servers.Discovered()
			if err != nil {
				return nil, err
			}
			return map[string]any{"servers": servers}, nil
		case "list_tools":
			if !state.has(req.Server) {
				return nil, notAvailable(req.Server)
			}
			tools, err := proxies.Tools(ctx, req.Server)
			if err != nil {
				return nil, err
			}
			return map[string]any{"tools": tools}, nil
		case "call_tool":
			if !state.has(req.Server) {
				// A server the policy forbids is refused as such, and
				// audited, as every call the policy refuses is; its
				// arguments are decoded only when small, for the record.
				if err := proxies.RefuseUnloaded(req.Server, req.Tool, refusedArguments(req.Arguments)); err != nil {
					return nil, err
				}
				return nil, notAvailable(req.Server)
			}
			if req.Tool == "" {
				return nil, fmt.Errorf("missing tool name")
			}
			args, err := callArguments(req.Arguments)
			if err != nil {
				return nil, err
			}
			res, warnings, err := proxies.CallTool(approval.WithCodeLine(ctx, req.Line), req.Server, req.Tool, args)
			if err != nil {
				return nil, err
			}
			if len(warnings) > 0 {
				return map[string]any{"result": res, "warnings": warnings}, nil
			}
			return map[string]any{"result": res}, nil
		case "query_tool_docs":
			return proxies.Docs(ctx, req.Server, req.Tool, req.Detail == "full")
		case "stubs":
			text, err := proxies.Stubs(ctx, req.Server)
			if err != nil {
				return nil, err
			}
			return map[string]any{"stubs": text}, nil
		case "search_tool_docs":
			return proxies.Search(ctx, req.Query, req.Limit, req.Detail == "full")
		case "memory":
			return b.store.entry(req.Op, req.Key, req.Value, req.Metadata)
		case "save_tool":
			if err := b.store.saveTool(req.Name, req.Source); err != nil {
				return nil, err
			}
			return map[string]any{"name": req.Name}, nil
		case "install":
			return b.install(ctx, cs, req.Op, req.Requirements, req.HaveWheel, req.ImagePip)
		default:
			return nil, fmt.Errorf("unknown request type %q", req.Type)
		}
	}
}

// maxRefusedArgs bounds the arguments of a refused call decoded for its
// audit record.
const maxRefusedArgs = 8 << 10

// callArguments decodes a call_tool's arguments: an object, or nothing
// (no arguments).
func callArguments(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, fmt.Errorf("malformed request: the arguments are not a JSON object: %v", err)
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// refusedArguments returns the arguments of a call refused before they
// are needed, for its audit record: decoded when small, else their size.
func refusedArguments(raw json.RawMessage) map[string]any {
	if len(raw) > maxRefusedArgs {
		return map[string]any{"(not decoded)": fmt.Sprintf("%d bytes", len(raw))}
	}
	args, err := callArguments(raw)
	if err != nil {
		return map[string]any{"(not decoded)": err.Error()}
	}
	return args
}

// notAvailable is the original's error for a server the session has not
// loaded, quoted as Python's repr quotes.
func notAvailable(server string) error {
	return fmt.Errorf("Server %s is not available", pyname.Repr(server))
}
