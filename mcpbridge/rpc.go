package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// A clientState is what one client connection has loaded.
type clientState struct {
	mu     sync.Mutex
	loaded []string // servers loaded in this session, in load order
}

func (c *clientState) add(names []string) (added bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(c.loaded, n) {
			c.loaded = append(c.loaded, n)
			added = true
		}
	}
	return added
}

func (c *clientState) servers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.loaded)
}

func (c *clientState) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.loaded, name)
}

// rpcRequest is what sandbox code sends through the runtime's rpc.
type rpcRequest struct {
	Type      string         `json:"type"`
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Query     string         `json:"query"`
	Limit     int            `json:"limit"`
	Detail    string         `json:"detail"`
	// memory and save_tool
	Op       string          `json:"op"`
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Metadata json.RawMessage `json:"metadata"`
	Name     string          `json:"name"`
	Source   string          `json:"source"`
}

// rpcHandler answers the sandbox of one client connection.
func (b *Bridge) rpcHandler(state *clientState) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
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
			return map[string]any{"servers": b.discovered()}, nil
		case "list_tools":
			if !state.has(req.Server) {
				return nil, notAvailable(req.Server)
			}
			tools, err := b.proxies.tools(ctx, req.Server)
			if err != nil {
				return nil, err
			}
			return map[string]any{"tools": tools}, nil
		case "call_tool":
			if !state.has(req.Server) {
				return nil, notAvailable(req.Server)
			}
			if req.Tool == "" {
				return nil, fmt.Errorf("missing tool name")
			}
			if req.Arguments == nil {
				req.Arguments = map[string]any{}
			}
			res, err := b.proxies.call(ctx, req.Server, req.Tool, req.Arguments)
			if err != nil {
				return nil, err
			}
			return map[string]any{"result": res}, nil
		case "query_tool_docs":
			return b.queryDocs(ctx, req)
		case "search_tool_docs":
			return b.searchDocs(ctx, req)
		case "memory":
			return b.store.memory(req.Op, req.Key, req.Value, req.Metadata)
		case "save_tool":
			if err := b.store.saveTool(req.Name, req.Source); err != nil {
				return nil, err
			}
			return map[string]any{"name": req.Name}, nil
		default:
			return nil, fmt.Errorf("unknown request type %q", req.Type)
		}
	}
}

// notAvailable is the original's error for a server the session has not
// loaded, quoted as Python's repr quotes.
func notAvailable(server string) error {
	return fmt.Errorf("Server %s is not available", pyRepr(server))
}

// pyRepr quotes s the way Python's repr quotes a plain string.
func pyRepr(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + strings.ReplaceAll(s, `\`, `\\`) + "'"
	}
	return strconv.Quote(s)
}

// discovered lists the configured servers with their descriptions,
// sorted by name as the original lists them.
func (b *Bridge) discovered() []map[string]string {
	out := []map[string]string{}
	for _, sc := range b.opts.Registry.Servers() {
		out = append(out, map[string]string{"name": sc.Name, "description": sc.Description, "cwd": sc.Cwd})
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["name"] < out[j]["name"] })
	return out
}

// serverAliases maps every configured server to its alias.
func (b *Bridge) serverAliases() map[string]string {
	var names []string
	for _, sc := range b.opts.Registry.Servers() {
		names = append(names, sc.Name)
	}
	al := aliases(names, "server")
	m := make(map[string]string, len(names))
	for i, n := range names {
		m[n] = al[i]
	}
	return m
}

// queryDocs documents one server's tools, or one tool.
func (b *Bridge) queryDocs(ctx context.Context, req rpcRequest) (any, error) {
	alias, ok := b.serverAliases()[req.Server]
	if !ok {
		return nil, fmt.Errorf("Server %s is not configured", pyRepr(req.Server))
	}
	tools, err := b.proxies.tools(ctx, req.Server)
	if err != nil {
		return nil, err
	}
	docs := toolDocs(req.Server, alias, tools, req.Detail == "full")
	if req.Tool != "" {
		docs = slices.DeleteFunc(docs, func(d toolDoc) bool { return d.Tool != req.Tool && d.ToolAlias != req.Tool })
		if len(docs) == 0 {
			return nil, fmt.Errorf("server %q has no tool %q", req.Server, req.Tool)
		}
	}
	return map[string]any{"docs": docs}, nil
}

// searchDocs ranks the tools of every configured server (starting the
// ones not yet running, concurrently) against the query.
func (b *Bridge) searchDocs(ctx context.Context, req rpcRequest) (any, error) {
	al := b.serverAliases()
	servers := b.opts.Registry.Servers()
	toolsOf := make([][]*mcp.Tool, len(servers))
	var g errgroup.Group
	g.SetLimit(8)
	for i, sc := range servers {
		g.Go(func() error {
			tools, err := b.proxies.tools(ctx, sc.Name)
			if err != nil {
				b.log.Warn("search skips a server that does not start", "server", sc.Name, "err", err)
				return nil
			}
			toolsOf[i] = tools
			return nil
		})
	}
	g.Wait()
	var docs []toolDoc
	var schemas []any
	for i, sc := range servers {
		docs = append(docs, toolDocs(sc.Name, al[sc.Name], toolsOf[i], req.Detail == "full")...)
		for _, t := range toolsOf[i] {
			schemas = append(schemas, t.InputSchema)
		}
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 5
	}
	return map[string]any{"results": searchTools(req.Query, docs, schemas, limit)}, nil
}

// toMap returns v as a JSON object.
func toMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}
