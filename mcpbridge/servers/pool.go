//lint:file-ignore SA1019 MCP log messages are deprecated by SEP-2577 (protocol 2026-07-28) but stay functional for at least twelve months; clients that set a level still get the proxied servers' events.

package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// Bounds of proxied servers.
const (
	// serverStartTimeout bounds starting a server and its initialize.
	serverStartTimeout = 60 * time.Second
	// toolCallTimeout bounds one proxied tool call.
	toolCallTimeout = 120 * time.Second
	// connectionEndWait is how long a failed call waits for its server's
	// connection to be seen ending, when its error is not the server's
	// answer.
	connectionEndWait = 200 * time.Millisecond
)

// errServerUnavailable reports a server the sandbox may not or cannot use.
var errServerUnavailable = errors.New("server not available")

// Outcomes of a proxied call, as Options.Counted is told them.
const (
	outcomeOK        = "ok"
	outcomeError     = "error"
	outcomeCancelled = "cancelled"
	outcomeTimeout   = "timeout"
)

// The MCP log levels of the events of proxied servers.
const (
	levelNotice  mcp.LoggingLevel = "notice"
	levelWarning mcp.LoggingLevel = "warning"
)

// Events sends an event of a proxied server to the client whose call ctx
// is: msg, at level, with attrs (key, value pairs) beside it.
type Events func(ctx context.Context, level mcp.LoggingLevel, msg string, attrs ...any)

// emit sends an event, when e is set.
func (e Events) emit(ctx context.Context, level mcp.LoggingLevel, msg string, attrs ...any) {
	if e != nil {
		e(ctx, level, msg, attrs...)
	}
}

// A pool keeps one warm client session per proxied MCP server,
// started on first use and restarted after it dies. Each client session
// has a pool of its own for the servers it loads; the bridge has one for
// the servers whose entry says "shared": true, whose calls come from many
// clients at once.
type pool struct {
	reg     *discovery.Registry
	version string // the bridge's, announced to the servers
	log     *slog.Logger
	catalog *catalog                           // told every tool list the servers give
	shared  bool                               // the bridge's pool of shared servers
	events  Events                             // nil: none
	counted func(server, tool, outcome string) // nil: not counted

	mu        sync.Mutex
	instances map[string]*instance
}

// newPool returns a pool of the servers of reg, whose instances
// announce themselves as version of the bridge and tell catalog (nil:
// none) the tools they list; shared says whether many client sessions
// call it.
func newPool(reg *discovery.Registry, version string, log *slog.Logger, catalog *catalog, shared bool) *pool {
	return &pool{reg: reg, version: version, log: log, catalog: catalog, shared: shared, instances: map[string]*instance{}}
}

// An instance is the connection to one server.
type instance struct {
	cfg     discovery.Server
	version string // the bridge's, announced to the server
	log     *slog.Logger
	catalog *catalog
	shared  bool
	events  Events // nil: none
	// stderr, when set, keeps the last lines the server wrote on its
	// standard error.
	stderr *engine.LineTail

	mu    sync.Mutex // serializes (re)starts
	cs    *mcp.ClientSession
	tools []*mcp.Tool
	// serverVersion is the version cs's server reported.
	serverVersion string
	dead          chan struct{} // closed when cs ended
	// retired are sessions detached by retire and not yet closed.
	retired map[*mcp.ClientSession]*retirement
	// inflight counts the calls in flight on each session.
	inflight map[*mcp.ClientSession]int
}

// A retirement is the closing of a detached session: at its timer, or,
// when it drains, as soon as no call is in flight on it.
type retirement struct {
	timer *time.Timer
	drain bool
}

// cancelGrace is how long a server whose call was cancelled keeps its
// connection: the go-sdk sends the call's notifications/cancelled off the
// caller's return path, and closing at once would lose it.
const cancelGrace = time.Second

// instance returns the instance of server name, creating its entry.
func (p *pool) instance(name string) (*instance, error) {
	cfg, ok := p.reg.Lookup(name)
	if !ok {
		return nil, notConfigured(name)
	}
	return p.instanceOf(cfg), nil
}

// notConfigured is the error for a server no configuration defines.
func notConfigured(name string) error {
	return fmt.Errorf("%w: server %q is not configured", errServerUnavailable, name)
}

// instanceOf returns the instance of the server cfg defines (cfg as the
// registry gives it now), made anew when its definition changed.
func (p *pool) instanceOf(cfg discovery.Server) *instance {
	name := cfg.Name
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.instances[name]
	if !ok || !sameConfig(c.cfg, cfg) {
		if ok {
			go c.close() // its definition changed: the next use starts the new one
		}
		c = &instance{cfg: cfg, version: p.version, log: p.log.With("server", name), catalog: p.catalog, shared: p.shared, events: p.events}
		p.instances[name] = c
	}
	return c
}

// start makes sure every named server runs, starting them concurrently.
func (p *pool) start(ctx context.Context, names []string) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		g.Go(func() error {
			c, err := p.instance(name)
			if err != nil {
				return err
			}
			_, err = c.session(ctx)
			return err
		})
	}
	return g.Wait()
}

// tools returns the tools of server name.
func (p *pool) tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	c, err := p.instance(name)
	if err != nil {
		return nil, err
	}
	if _, err := c.session(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools, nil
}

// call calls a tool of server name.
func (p *pool) call(ctx context.Context, cfg discovery.Server, tool string, args map[string]any) (res *mcp.CallToolResult, err error) {
	name := cfg.Name
	outcome := outcomeError
	defer func() {
		if p.counted != nil {
			p.counted(name, tool, outcome)
		}
	}()
	c := p.instanceOf(cfg)
	cs, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, toolCallTimeout)
	defer cancel()
	c.begin(cs)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	c.end(cs)
	if err != nil {
		if c.stopped(cs, err) {
			c.events.emit(ctx, levelWarning, "a proxied server stopped during a call; it is restarted on next use", "server", name, "tool", tool)
			return nil, fmt.Errorf("server %q stopped during the call to %s (it is restarted on next use): %w", name, tool, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			outcome = outcomeTimeout
			// A server that does not answer is restarted on next use; a
			// shared one keeps its connection for the other calls in
			// flight on it, and is closed when they are done.
			if c.shared {
				c.retire(cs, toolCallTimeout, true)
			} else {
				c.close()
			}
			c.events.emit(ctx, levelWarning, "a proxied server did not answer in time; it was restarted",
				"server", name, "tool", tool, "limit", toolCallTimeout.String())
			return nil, fmt.Errorf("server %q did not answer %s within %v; it was restarted", name, tool, toolCallTimeout)
		}
		if errors.Is(err, context.Canceled) {
			outcome = outcomeCancelled
		}
		if errors.Is(err, context.Canceled) && c.shared {
			// The server is told so; other clients' calls on it go on.
			c.events.emit(ctx, levelNotice, "a call to a shared proxied server was cancelled when its run_python call ended",
				"server", name, "tool", tool)
			return nil, fmt.Errorf("the call to %s.%s was cancelled when its run_python call ended", name, tool)
		}
		if errors.Is(err, context.Canceled) {
			// The run_python call ended (timeout, interrupt, client gone)
			// with this call in flight: the server is told so, and since
			// it may hang all the same, the next use starts it anew.
			c.retire(cs, cancelGrace, false)
			c.events.emit(ctx, levelNotice, "a proxied call was cancelled when its run_python call ended; the server is restarted on next use",
				"server", name, "tool", tool)
			return nil, fmt.Errorf("the call to %s.%s was cancelled when its run_python call ended; server %q is restarted on next use", name, tool, name)
		}
		return nil, fmt.Errorf("calling %s.%s: %w", name, tool, err)
	}
	if !res.IsError {
		outcome = outcomeOK
	}
	return res, nil
}

// about returns the tool called tool of the server cfg as its running
// instance listed it (nil when it did not), and the server's version.
func (p *pool) about(cfg discovery.Server, tool string) (*mcp.Tool, string) {
	c := p.instanceOf(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tools {
		if t.Name == tool {
			return t, c.serverVersion
		}
	}
	return nil, c.serverVersion
}

// close stops every server.
func (p *pool) close() {
	p.mu.Lock()
	instances := p.instances
	p.instances = map[string]*instance{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range instances {
		wg.Add(1)
		go func() { defer wg.Done(); c.close() }()
	}
	wg.Wait()
}

// session returns the live client session, starting the server when it
// is not running or died.
func (c *instance) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		select {
		case <-c.dead:
			c.log.Warn("proxied server stopped; restarting it")
			c.events.emit(ctx, levelWarning, "a proxied server had stopped; it is restarted", "server", c.cfg.Name)
			c.cs = nil
		default:
			return c.cs, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	start := time.Now()
	cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
	cmd.Env = os.Environ()
	for k, v := range c.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = c.cfg.Cwd
	cmd.Stderr = &engine.LineLogger{Log: c.log, Level: slog.LevelDebug, Msg: "server stderr", Tail: c.stderr}
	client := mcp.NewClient(&mcp.Implementation{Name: discovery.ImplementationName, Version: c.version}, &mcp.ClientOptions{
		// Servers may change their tools at any time (server-everything
		// does right after initialize): refresh the cache.
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			go c.refreshTools(req.Session)
		},
	})
	cs, err := client.Connect(ctx, &noiseTolerantTransport{cmd: cmd, log: c.log}, nil)
	if err != nil {
		return nil, fmt.Errorf("starting server %q (%s): %w", c.cfg.Name, c.cfg.Command, err)
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, fmt.Errorf("listing the tools of server %q: %w", c.cfg.Name, err)
		}
		tools = append(tools, t)
	}
	dead := make(chan struct{})
	go func() { cs.Wait(); close(dead) }()
	c.cs, c.tools, c.dead, c.serverVersion = cs, tools, dead, serverVersion(cs)
	c.catalog.put(c.cfg, tools, c.serverVersion)
	c.log.Info("proxied server started", "tools", len(tools), "took", time.Since(start))
	return cs, nil
}

// refreshTools re-lists the tools of cs and caches them if cs is still
// the client's session.
func (c *instance) refreshTools(cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), serverStartTimeout)
	defer cancel()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			c.log.Debug("refreshing tools", "err", err)
			return
		}
		tools = append(tools, t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == cs || c.cs == nil {
		c.tools = tools
		c.catalog.put(c.cfg, tools, serverVersion(cs))
	}
	c.log.Debug("tool list changed", "tools", len(tools))
}

// stopped reports whether cs ended (the call's err says the connection
// closed or broke, or its Wait returned), forgetting it so the next use
// restarts the server without waiting for the exit to be noticed.
func (c *instance) stopped(cs *mcp.ClientSession, err error) bool {
	dead := errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, engine.ErrLineTooLong)
	c.mu.Lock()
	deadCh := c.dead
	current := c.cs == cs
	c.mu.Unlock()
	if !dead && current {
		// An error that is neither the server's own answer nor the
		// call's context is the connection failing: its end is noticed
		// a moment later.
		var wire *jsonrpc.Error
		wait := time.Duration(0)
		if !errors.As(err, &wire) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			wait = connectionEndWait
		}
		select {
		case <-deadCh:
			dead = true
		case <-time.After(wait):
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if dead && c.cs == cs {
		c.cs = nil
		go cs.Close()
	}
	return dead
}

// close stops the server: its session and every retired one.
func (c *instance) close() {
	c.mu.Lock()
	cs, retired := c.cs, c.retired
	c.cs, c.retired = nil, nil
	c.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	// A retired session's timer that fired before retired was taken
	// closed its session already; one that fires after finds it gone.
	for old, r := range retired {
		r.timer.Stop()
		old.Close()
	}
}

// begin and end count a call in flight on cs; the end of the last call on
// a draining retired session closes it.
func (c *instance) begin(cs *mcp.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight == nil {
		c.inflight = map[*mcp.ClientSession]int{}
	}
	c.inflight[cs]++
}

func (c *instance) end(cs *mcp.ClientSession) {
	c.mu.Lock()
	c.inflight[cs]--
	n := c.inflight[cs]
	if n <= 0 {
		delete(c.inflight, cs)
	}
	r, ok := c.retired[cs]
	closeNow := ok && r.drain && n <= 0
	if closeNow {
		r.timer.Stop()
		delete(c.retired, cs)
	}
	c.mu.Unlock()
	if closeNow {
		go cs.Close()
	}
}

// retire detaches cs, so that the next use starts the server anew, and
// closes it after grace, or, when drain is set, once no call is in flight
// on it (grace then bounds the wait).
func (c *instance) retire(cs *mcp.ClientSession, grace time.Duration, drain bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == cs {
		c.cs = nil
	}
	if c.retired == nil {
		c.retired = map[*mcp.ClientSession]*retirement{}
	}
	if _, ok := c.retired[cs]; ok {
		return
	}
	if drain && c.inflight[cs] == 0 {
		go cs.Close()
		return
	}
	c.retired[cs] = &retirement{drain: drain, timer: time.AfterFunc(grace, func() {
		c.mu.Lock()
		_, mine := c.retired[cs]
		delete(c.retired, cs)
		c.mu.Unlock()
		if mine {
			cs.Close()
		}
	})}
}

// serverVersion returns the version a proxied server reported in its
// serverInfo, or "".
func serverVersion(cs *mcp.ClientSession) string {
	if res := cs.InitializeResult(); res != nil && res.ServerInfo != nil {
		return res.ServerInfo.Version
	}
	return ""
}
