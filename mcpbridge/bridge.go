// Package mcpbridge serves the run_python tool over MCP: one warm sandbox
// session per client connection, proxied MCP servers reachable from the
// sandbox code, results rendered as the original bridge renders them.
package mcpbridge

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// sandboxAPI is the helper surface installed in every interpreter.
//
//go:embed sandbox_api.py
var sandboxAPI string

// Name is the bridge's MCP implementation name, as the original's.
const Name = "mcp-server-code-execution-mode"

// A Bridge is the MCP server of the run_python tool.
type Bridge struct {
	eng    engine.Engine
	opts   Options
	log    *slog.Logger
	server *mcp.Server
	seq    atomic.Int64

	proxies *proxyPool
	store   *store

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*clientSession
	closed   bool
}

// A clientSession is the sandbox of one client connection and what it
// has loaded.
type clientSession struct {
	sandbox *entrypoint.Session
	state   *clientState
}

// New returns a Bridge whose sandboxes eng starts; nothing starts until
// a client calls a tool. opts may be nil.
func New(eng engine.Engine, opts *Options) *Bridge {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	b := &Bridge{eng: eng, opts: o, log: o.Logger, sessions: map[*mcp.ServerSession]*clientSession{}}
	b.proxies = newProxyPool(o.Registry, b.log)
	b.store = &store{dir: o.Registry.StateDir()}
	b.server = mcp.NewServer(&mcp.Implementation{Name: Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: serverInstructions,
		Logger:       b.log,
	})
	b.server.AddTool(runPythonTool(o.DefaultTimeout, o.MaxTimeout), b.runPython)
	b.server.AddResource(capabilitiesResource(), b.readCapabilities)
	return b
}

// Server returns the MCP server, to run on a transport.
func (b *Bridge) Server() *mcp.Server { return b.server }

// Close stops every client's sandbox.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	sessions := b.sessions
	b.sessions = map[*mcp.ServerSession]*clientSession{}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() { defer wg.Done(); s.sandbox.Close() }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); b.proxies.close() }()
	wg.Wait()
	return nil
}

// session returns the sandbox session of the client connection ss,
// creating it on first use; it is closed when the connection ends.
func (b *Bridge) session(ss *mcp.ServerSession) (*clientSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, entrypoint.ErrSessionClosed
	}
	if s, ok := b.sessions[ss]; ok {
		return s, nil
	}
	name := "client-" + strconv.FormatInt(b.seq.Add(1), 10)
	cs := &clientSession{state: &clientState{}}
	opts := b.opts.Session
	opts.Spec.Session = name
	opts.Logger = b.log.With("session", name)
	opts.RPC = b.rpcHandler(cs.state)
	opts.Init = func() string { return sandboxAPI + "\n" + b.savedToolsCode() + b.configureCode(cs.state) }
	cs.sandbox = entrypoint.New(b.eng, &opts)
	b.sessions[ss] = cs
	if ss != nil {
		go func() {
			ss.Wait()
			cs.sandbox.Close() // Bridge.Close, racing with this, waits for it too
			b.mu.Lock()
			delete(b.sessions, ss)
			b.mu.Unlock()
			b.log.Debug("client disconnected; sandbox stopped", "session", name)
		}()
	}
	return cs, nil
}

// savedToolsCode returns the code that defines the tools saved with
// save_tool, each on its own so one broken tool spares the others.
func (b *Bridge) savedToolsCode() string {
	var sb strings.Builder
	for name, src := range b.store.toolSources() {
		fmt.Fprintf(&sb, "_mcp_bridge_load_tool(%s, %s)\n", strconv.Quote(name), strconv.Quote(src))
	}
	return sb.String()
}

// configureCode returns the Python call that installs the proxies of the
// servers state has loaded.
func (b *Bridge) configureCode(state *clientState) string {
	al := b.serverAliases()
	type toolMeta struct {
		Name        string `json:"name"`
		Alias       string `json:"alias"`
		Description string `json:"description"`
		InputSchema any    `json:"input_schema"`
		// Params are the decoded input schema the sandbox turns into
		// the tool's signature.
		Params []toolParam `json:"params"`
	}
	type serverMeta struct {
		Name        string     `json:"name"`
		Alias       string     `json:"alias"`
		Description string     `json:"description"`
		Cwd         string     `json:"cwd"`
		Tools       []toolMeta `json:"tools"`
	}
	servers := []serverMeta{}
	for _, name := range state.servers() {
		sc, _ := b.opts.Registry.Lookup(name)
		tools, err := b.proxies.tools(context.Background(), name)
		if err != nil {
			b.log.Warn("loaded server has no tools to install", "server", name, "err", err)
		}
		m := serverMeta{Name: name, Alias: al[name], Description: sc.Description, Cwd: sc.Cwd, Tools: []toolMeta{}}
		for _, d := range toolDocs(name, al[name], tools, true) {
			params, err := toolParams(d.InputSchema)
			if err != nil {
				b.log.Warn("a tool's input schema is unusable; it gets no signature and its arguments are not checked",
					"server", name, "tool", d.Tool, "err", err)
			}
			if params == nil {
				params = []toolParam{}
			}
			m.Tools = append(m.Tools, toolMeta{Name: d.Tool, Alias: d.ToolAlias, Description: d.Description, InputSchema: d.InputSchema, Params: params})
		}
		servers = append(servers, m)
	}
	data, _ := json.Marshal(map[string]any{"servers": servers})
	return "_mcp_bridge_configure(__import__('json').loads(" + strconv.Quote(string(data)) + "))"
}

// runPython is the run_python tool handler.
func (b *Bridge) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	mode := b.opts.OutputMode
	args, problem := parseArgs(req.Params.Arguments, b.opts.DefaultTimeout, b.opts.MaxTimeout, b.knownServer)
	if problem != "" {
		return validationError(problem).toolResult(mode), nil
	}
	cs, err := b.session(req.Session)
	if err != nil {
		return outcome{status: statusError, summary: "Sandbox error: " + err.Error(), err: err.Error()}.toolResult(mode), nil
	}
	if err := b.load(ctx, cs, args.servers); err != nil {
		return outcome{status: statusError, summary: "Loading MCP servers failed: " + err.Error(), err: err.Error(), servers: args.servers}.toolResult(mode), nil
	}
	res, err := cs.sandbox.Execute(b.traceStart(ctx), args.code, args.timeout)
	if err != nil {
		b.log.Warn("run_python failed", "err", err)
	}
	secs := int(args.timeout.Seconds())
	return fromSession(res, err, args.servers, secs).toolResult(mode), nil
}

// traceStart returns ctx with a StartTrace that logs the phases of a
// sandbox start, should this call start one, and passes them on to
// Options.StartTrace.
func (b *Bridge) traceStart(ctx context.Context) context.Context {
	var attrs []any
	var total time.Duration
	return engine.WithStartTrace(ctx, &engine.StartTrace{Phase: func(name string, took time.Duration) {
		if t := b.opts.StartTrace; t != nil && t.Phase != nil {
			t.Phase(name, took)
		}
		attrs = append(attrs, name, took)
		total += took
		if name == entrypoint.PhaseInit {
			b.log.Info("sandbox started", append([]any{"took", total}, attrs...)...)
		}
	}})
}

// load starts the named servers and, when any is new to the session,
// installs their proxies in its interpreter.
func (b *Bridge) load(ctx context.Context, cs *clientSession, servers []string) error {
	if len(servers) == 0 {
		return nil
	}
	if err := b.proxies.start(ctx, servers); err != nil {
		return err
	}
	if !cs.state.add(servers) {
		return nil
	}
	res, err := cs.sandbox.Execute(ctx, b.configureCode(cs.state), 30*time.Second)
	if err != nil {
		return err
	}
	if res.Status != entrypoint.StatusSuccess {
		return fmt.Errorf("installing the server proxies: %s %s", res.ExceptionType, res.ExceptionMessage)
	}
	return nil
}

// knownServer reports whether name is a configured MCP server.
func (b *Bridge) knownServer(name string) bool {
	_, ok := b.opts.Registry.Lookup(name)
	return ok
}

// readCapabilities serves the capabilities resource.
func (b *Bridge) readCapabilities(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != CapabilitiesURI {
		return nil, invalidParams(fmt.Sprintf("unknown resource %q; this server has %s", req.Params.URI, CapabilitiesURI))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: CapabilitiesURI, MIMEType: "text/markdown", Text: capabilitiesManual,
	}}}, nil
}
