// Package mcpbridge serves the run_python tool over MCP: one warm sandbox
// session per client connection, proxied MCP servers reachable from the
// sandbox code, results rendered as the original bridge renders them.
package mcpbridge

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// Name is the bridge's MCP implementation name, as the original's.
const Name = "mcp-server-code-execution-mode"

// Options configure a Bridge.
type Options struct {
	// Engine starts the sandboxes. Required.
	Engine engine.Engine
	// Settings are the sandbox settings (see engine.LoadSettings).
	// Required.
	Settings engine.Settings
	// Config is the bridge's configuration (see LoadConfig). Zero: the
	// defaults.
	Config Config
	// Version is reported to clients. Zero: "dev".
	Version string
	// Logger receives the bridge's logs. Zero: discarded.
	Logger *slog.Logger
	// Registry finds the configured MCP servers. Zero: a Registry over
	// the default locations.
	Registry *Registry
}

// A Bridge is the MCP server of the run_python tool.
type Bridge struct {
	opts   Options
	log    *slog.Logger
	server *mcp.Server
	seq    atomic.Int64

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*entrypoint.Session
	closed   bool
}

// New returns a Bridge; nothing starts until a client calls a tool.
func New(opts Options) *Bridge {
	if opts.Config.MaxTimeout == 0 {
		opts.Config = Config{DefaultTimeout: DefaultTimeout, MaxTimeout: DefaultMaxTimeout, OutputMode: OutputCompact}
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	b := &Bridge{opts: opts, sessions: map[*mcp.ServerSession]*entrypoint.Session{}}
	b.log = opts.Logger
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.opts.Registry == nil {
		b.opts.Registry = NewRegistry(DiscoveryOptions{Logger: b.log})
	}
	b.server = mcp.NewServer(&mcp.Implementation{Name: Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: serverInstructions,
		Logger:       b.log,
	})
	b.server.AddTool(runPythonTool(opts.Config), b.runPython)
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
	b.sessions = map[*mcp.ServerSession]*entrypoint.Session{}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	wg.Wait()
	return nil
}

// session returns the sandbox session of the client connection ss,
// creating it on first use; it is closed when the connection ends.
func (b *Bridge) session(ss *mcp.ServerSession) (*entrypoint.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, entrypoint.ErrSessionClosed
	}
	if s, ok := b.sessions[ss]; ok {
		return s, nil
	}
	name := "client-" + strconv.FormatInt(b.seq.Add(1), 10)
	opts := entrypoint.OptionsFromSettings(b.opts.Engine, b.opts.Settings, name)
	opts.Logger = b.log.With("session", name)
	s := entrypoint.New(opts)
	b.sessions[ss] = s
	if ss != nil {
		go func() {
			ss.Wait()
			s.Close() // Bridge.Close, racing with this, waits for it too
			b.mu.Lock()
			delete(b.sessions, ss)
			b.mu.Unlock()
			b.log.Debug("client disconnected; sandbox stopped", "session", name)
		}()
	}
	return s, nil
}

// runPython is the run_python tool handler.
func (b *Bridge) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cfg := b.opts.Config
	args, problem := parseArgs(req.Params.Arguments, cfg, b.knownServer)
	if problem != "" {
		return validationError(problem).toolResult(cfg.OutputMode), nil
	}
	sess, err := b.session(req.Session)
	if err != nil {
		return outcome{status: statusError, summary: "Sandbox error: " + err.Error(), err: err.Error()}.toolResult(cfg.OutputMode), nil
	}
	res, err := sess.Execute(ctx, args.code, args.timeout)
	if err != nil {
		b.log.Warn("run_python failed", "err", err)
	}
	secs := int(args.timeout.Seconds())
	return fromSession(res, err, args.servers, secs).toolResult(cfg.OutputMode), nil
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
