package mcpbridge

import (
	"context"
	"crypto/rand"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/tasks"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// New returns a Bridge whose sandboxes eng starts; nothing starts until
// a client calls a tool, unless opts asks for a warm pool. opts may be nil.
func New(eng engine.Engine, opts *Options) *Bridge {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	b := &Bridge{eng: eng, opts: o, log: o.Logger, sessions: map[*mcp.ServerSession]*clientSession{}, closing: make(chan struct{})}
	b.metrics = newMetrics(eng, o.Version, b.sessionCount, func() int { return b.pool.readyCount() })
	if o.Session.Sleep != nil {
		b.sleepers = &sleepers{eng: eng}
		b.metrics.registerSleepers(b.sleepers)
	}
	b.store = &store{dir: o.Registry.StateDir()}
	b.policy = policy.Open(o.PolicyFile, o.Registry.StateDir(), b.log)
	b.searchKeywords = toolsearch.NewKeywordsFile(o.SearchKeywordsFile, o.Registry.StateDir(), b.log)
	b.servers = servers.New(&servers.Options{Registry: o.Registry, Policy: b.policy, Keywords: b.searchKeywords, Version: o.Version, Logger: b.log,
		//lint:ignore SA1019 logging is deprecated from 2026-07-28 on, and 2025-11-25 clients use it (logging/setLevel)
		Events: func(ctx context.Context, level mcp.LoggingLevel, msg string, attrs ...any) {
			eventsOf(ctx).emit(level, msg, attrs...)
		},
		Counted: b.metrics.proxiedCall, SearchWait: o.searchWait, ObserveResults: o.ObserveResults})
	b.audit = o.Audit
	if b.opts.Session.RPCBudget == nil {
		// One bound on the RPC bytes in flight for all its sessions.
		b.opts.Session.RPCBudget = entrypoint.NewRPCBudget(0, 0)
	}
	keys, err := handle.NewKeyring(o.Handles.Key)
	if err != nil {
		b.log.Error("the handle key is unusable: handles get a random key of this process", "err", err)
		keys, _ = handle.NewKeyring("")
	}
	b.handles = &handles{
		table: newHandleTable(), keys: keys, files: &sandboxfile.Keeper{Owner: o.Session.Spec.User, Keys: keys},
		opts: o.Handles, maxTimeout: o.MaxTimeout, outputMode: o.OutputMode, sleeps: o.Session.Sleep != nil,
		servers: b.servers, requests: &b.requests, log: b.log,
		fresh: func() *clientSession {
			if cs := b.pool.take(); cs != nil {
				return cs
			}
			return b.newClientSession()
		},
		over: func(client [32]byte) string {
			return b.quota.sandboxes(b.sessionsOf(client) + b.handles.table.count(client))
		},
		attach: func(sb handle.Sandbox) *clientSession {
			return b.buildClientSession(func(opts *entrypoint.Options) *entrypoint.Session {
				return entrypoint.Resume(b.eng, sb.Engine, sb.Ref, opts)
			})
		},
	}
	b.forks = &forker{max: maxForks(&o), hs: b.handles, eng: eng, build: b.buildClientSession,
		over: func(client [32]byte, n int) string {
			return b.quota.sandboxes(b.sessionsOf(client) + b.handles.table.count(client) + n - 1)
		}}
	b.tasks = b.newTasks(keys)
	if o.Handles.Key != "" {
		// Replicas share the key: every sandbox may come to be behind a
		// handle another replica resumes.
		b.opts.Session.Spec.Resumable = keys.KeyID()
		if engine.MayBe[engine.Sweeper](eng) {
			ctx, cancel := context.WithCancel(context.Background())
			b.stopSweep = cancel
			go b.handles.sweep(ctx, eng)
		}
	}
	gw, err := egress.New(&egress.Options{Policy: b.policy.Current, CA: o.EgressCA, Audit: o.Audit, Metrics: b.metrics, Logger: b.log})
	if err != nil {
		b.log.Error("the egress gateway cannot start: sandboxes get no network endpoint", "err", err)
	} else {
		b.egress = gw
	}
	var network packages.NetworkFunc
	if b.egress != nil {
		network = func(session string, index, files []string) (packages.Installer, []byte) {
			return b.egress.NewInstallClient(session, policy.InstallHosts{Index: index, Files: files}), b.egress.CA()
		}
	}
	b.quota = newCallQuota(o.PersonCallsPerMinute, o.PersonMaxSandboxes)
	b.wheels = packages.NewWheels(&packages.WheelsOptions{Packages: &b.opts.Packages, Network: network, Logger: b.log})
	if len(o.Packages.Requirements) > 0 && eng != nil {
		if b.egress == nil {
			b.log.Error("a package set is configured but the egress gateway, through which it is installed, cannot start")
		} else {
			b.packages = packages.NewStore(&packages.StoreOptions{Packages: &b.opts.Packages, Engine: eng, Spec: o.Session.Spec, Logger: b.log,
				Network: network, Wheels: b.wheels})
		}
	}
	b.server = mcp.NewServer(&mcp.Implementation{Name: implementationName, Version: o.Version}, &mcp.ServerOptions{
		Instructions: serverInstructions,
		Logger:       b.log,
		GetSessionID: sessionIDs(o.Replica),
		Capabilities: capabilities(o.Tasks.Offered()),
	})
	b.server.AddTool(runPythonTool(o.DefaultTimeout, o.MaxTimeout, b.forks.max), b.runPython)
	b.tasks.Register(b.server)
	b.server.AddResource(capabilitiesResource(), b.readCapabilities)
	b.server.AddResourceTemplate(render.OutputTemplate(), b.readOutput)
	b.server.AddResourceTemplate(render.FilesTemplate(), b.readFileResource)
	if eng != nil {
		b.pool = newSandboxPool(o.PoolSize, o.PoolOnce, func() *clientSession {
			cs := b.newClientSession()
			cs.session.SetIdleTimeout(-1) // until a client adopts it
			return cs
		}, b.startPooled, b.log)
	}
	return b
}

// capabilities returns the server's capabilities: logging, prompts (none,
// declared with an empty list, as 2026-07-28 clients expect of a server
// that lists them), and the Tasks extension unless tasks are off.
func capabilities(offerTasks bool) *mcp.ServerCapabilities {
	//lint:ignore SA1019 logging is deprecated from 2026-07-28 on, and 2025-11-25 clients use it (logging/setLevel)
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Prompts: &mcp.PromptCapabilities{}}
	if offerTasks {
		caps.AddExtension(tasks.Extension, map[string]any{})
	}
	return caps
}

// Server returns the MCP server, to run on a transport.
func (b *Bridge) Server() *mcp.Server { return b.server }

// Close stops every client's sandbox, the pool's and every proxied server.
func (b *Bridge) Close() error {
	if b.stopSweep != nil {
		b.stopSweep()
	}
	b.mu.Lock()
	if !b.closed {
		close(b.closing)
	}
	b.closed = true
	sessions := b.sessions
	b.sessions = map[*mcp.ServerSession]*clientSession{}
	b.mu.Unlock()
	b.tasks.Close() // before their calls are interrupted: failed, not completed
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() { defer wg.Done(); s.close() }()
	}
	wg.Add(3)
	go func() { defer wg.Done(); b.handles.close() }()
	go func() { defer wg.Done(); b.servers.Close() }()
	go func() { defer wg.Done(); b.pool.close() }()
	wg.Wait()
	b.tasks.Wait()  // the last records of the tasks Close failed
	b.ending.Wait() // sessions ended just before (DELETE, idle) are closing
	return nil
}

// CallsInFlight returns how many run_python calls are running or queued.
func (b *Bridge) CallsInFlight() int { return int(b.calls.Load()) }

// startPooled starts the sandbox of a pooled session, traced as a call's.
func (b *Bridge) startPooled(ctx context.Context, cs *clientSession) error {
	err := cs.session.Start(b.traceStart(ctx))
	if ctx.Err() == nil {
		b.metrics.startFailed(err)
	}
	return err
}

// sessionIDs returns the maker of Mcp-Session-Id values: 130 random bits
// (26 base32 characters), after replica and a dot when replica is set.
func sessionIDs(replica string) func() string {
	if replica == "" {
		return rand.Text
	}
	return func() string { return replica + "." + rand.Text() }
}
