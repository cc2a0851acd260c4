// Package mcpbridge serves the run_python tool over MCP: one warm sandbox
// session per client connection, proxied MCP servers reachable from the
// sandbox code, results rendered as the original bridge renders them.
package mcpbridge

import (
	"context"
	"crypto/rand"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// implementationName is the bridge's MCP implementation name, as the
// original's: announced to clients and to proxied servers, and the name
// by which discovery knows an entry that would start the bridge itself.
const implementationName = "mcp-server-code-execution-mode"

// A Bridge is the MCP server of the run_python tool.
type Bridge struct {
	eng    engine.Engine
	opts   Options
	log    *slog.Logger
	server *mcp.Server
	seq    atomic.Int64

	shared        *proxyPool   // the instances of the servers every session shares
	catalog       *toolCatalog // the tools every server listed last
	store         *store
	pool          *sandboxPool // warm sandboxes for new sessions (nil: none)
	metrics       *metrics
	health        healthCache
	policy        *policy.File // the tool policy (nil: none)
	searchAliases *aliasFile   // the operator's search aliases
	audit         *audit.Log   // nil: no audit records

	httpRequests sync.Map     // key of an HTTP request in flight → its context
	calls        atomic.Int64 // run_python calls in flight
	callSeq      atomic.Int64 // numbers the calls, for the logs

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*clientSession
	closed   bool
	ending   sync.WaitGroup // sessions whose connection ended, being closed
}

// New returns a Bridge whose sandboxes eng starts; nothing starts until
// a client calls a tool, unless opts asks for a warm pool. opts may be nil.
func New(eng engine.Engine, opts *Options) *Bridge {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	b := &Bridge{eng: eng, opts: o, log: o.Logger, sessions: map[*mcp.ServerSession]*clientSession{}}
	b.catalog = newToolCatalog(filepath.Join(o.Registry.stateDir(), "catalog"), b.log)
	b.metrics = newMetrics(b)
	b.shared = newProxyPool(o.Registry, o.Version, b.log, b.catalog, true)
	b.shared.metrics = b.metrics
	b.store = &store{dir: o.Registry.stateDir()}
	b.policy = policy.Open(o.PolicyFile, o.Registry.stateDir(), b.log)
	b.searchAliases = newAliasFile(o.SearchAliasesFile, o.Registry.stateDir(), b.log)
	b.audit = o.Audit
	b.server = mcp.NewServer(&mcp.Implementation{Name: implementationName, Version: o.Version}, &mcp.ServerOptions{
		Instructions: serverInstructions,
		Logger:       b.log,
		GetSessionID: sessionIDs(o.Replica),
	})
	b.server.AddTool(runPythonTool(o.DefaultTimeout, o.MaxTimeout), b.runPython)
	b.server.AddResource(capabilitiesResource(), b.readCapabilities)
	b.server.AddResourceTemplate(outputTemplate(), b.readOutput)
	b.server.AddResourceTemplate(filesTemplate(), b.readFileResource)
	if eng != nil {
		b.pool = newSandboxPool(o.PoolSize, o.PoolOnce, func() *clientSession {
			cs := b.newClientSession()
			cs.session.SetIdleTimeout(-1) // until a client adopts it
			return cs
		}, b.startPooled, b.log)
	}
	return b
}

// Server returns the MCP server, to run on a transport.
func (b *Bridge) Server() *mcp.Server { return b.server }

// Close stops every client's sandbox, the pool's and every proxied server.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	sessions := b.sessions
	b.sessions = map[*mcp.ServerSession]*clientSession{}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() { defer wg.Done(); s.close() }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); b.shared.close() }()
	go func() { defer wg.Done(); b.pool.close() }()
	wg.Wait()
	b.ending.Wait() // sessions ended just before (DELETE, idle) are closing
	return nil
}

// CallsInFlight returns how many run_python calls are running or queued.
func (b *Bridge) CallsInFlight() int { return int(b.calls.Load()) }

// runPython is the run_python tool handler. A call whose client asks
// through input-required results (protocol 2026-07-28) runs on its own
// and may answer with a question first (suspend.go); the others run
// here, in the handler.
func (b *Bridge) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return b.resume(ctx, req), nil
	}
	b.calls.Add(1)
	began := time.Now()
	warmSynonyms()
	mode := b.opts.OutputMode
	args, problem := parseArgs(req.Params.Arguments, b.opts.DefaultTimeout, b.opts.MaxTimeout, b.knownServer)
	var cs *clientSession
	// finish records a call that ended with result: metrics and audit.
	finish := func(result *mcp.CallToolResult, outBytes int) {
		b.metrics.call(resultStatus(result), time.Since(began))
		b.auditRunPython(req, cs, args, began, resultStatus(result), outBytes)
		b.calls.Add(-1)
	}
	if problem != "" {
		res := validationError(problem).toolResult(mode)
		finish(res, 0)
		return res, nil
	}
	cs, err := b.sessionOf(req.Session)
	if err != nil {
		res := outcome{status: statusError, summary: "Sandbox error: " + err.Error(), err: err.Error()}.toolResult(mode)
		finish(res, 0)
		return res, nil
	}
	// Every line of the call names its client session (the bridge's name
	// and, over HTTP, the Mcp-Session-Id) and the call.
	log := cs.events.log.With("call", b.callSeq.Add(1))
	if req.Session != nil && req.Session.ID() != "" {
		log = log.With("mcp_session", req.Session.ID())
	}
	log.Debug("run_python call", "timeout", args.timeout, "servers", args.servers)
	if asksByResult(req.Session) {
		return b.runSuspendable(ctx, req, cs, args, log, finish), nil
	}
	ctx, cancel := b.callContext(ctx, req.Extra)
	defer cancel()
	stopHalt := context.AfterFunc(cs.halted, cancel) // its MCP session is ending
	defer stopHalt()
	res, outBytes := b.execute(ctx, req, cs, args, log, nil)
	log.Debug("run_python answered", "status", resultStatus(res), "took", time.Since(began))
	finish(res, outBytes)
	return res, nil
}

// execute runs a validated call in its client session's sandbox and
// returns its result and the bytes of output it made; log is the call's.
// ask, when set, is how a confirmation asks the client (else it elicits
// during the call).
func (b *Bridge) execute(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, args callArgs, log *slog.Logger, ask askFunc) (*mcp.CallToolResult, int) {
	mode := b.opts.OutputMode
	call := &entrypoint.Call{Code: args.code, Timeout: args.timeout}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		// The client follows the call: heartbeats from here on (loading
		// servers can take a while), then its output and the code's
		// reports as they come.
		rep := newProgressReporter(ctx, token, req.Session.NotifyProgress)
		call.OnOutput, call.OnProgress = rep.output, rep.progress
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); rep.run(pctx) }()
		defer func() { stop(); <-done; rep.finish() }()
	}
	leave, err := cs.queue.enter(ctx)
	if err != nil {
		return outcome{status: statusError, summary: "Not run: " + err.Error(), err: err.Error()}.toolResult(mode), 0
	}
	defer leave()
	cs.current.Store(&callInfo{ctx: ctx, ss: req.Session, ask: ask})
	defer cs.current.Store(nil)
	if err := b.syncSavedTools(withEvents(ctx, cs.events), cs); err != nil {
		log.Warn("defining the tools saved since the sandbox started", "err", err)
	}
	if err := b.load(withEvents(ctx, cs.events), cs, args.servers); err != nil {
		return outcome{status: statusError, summary: "Loading MCP servers failed: " + err.Error(), err: err.Error(), servers: args.servers}.toolResult(mode), 0
	}
	res, err := cs.session.Run(b.traceStart(withEvents(ctx, cs.events)), call)
	if err != nil {
		log.Warn("run_python failed", "err", err)
		b.metrics.startFailed(err)
	}
	b.metrics.output(res)
	outBytes := 0
	if res != nil {
		outBytes = len(res.Stdout) + len(res.Stderr)
	}
	reportEvents(cs.events, res, err, args.timeout)
	out := fromSession(res, err, args.servers, int(args.timeout.Seconds()))
	maxImages, maxImageBytes := b.opts.Session.ImageLimits()
	out.rich = richOf(ctx, res, cs.session.OpenFile, &cs.files, maxImages, maxImageBytes)
	out.applyBudget(b.opts.OutputBudget, func(whole string) string {
		return outputURIPrefix + strconv.Itoa(cs.outputs.add(whole))
	})
	return out.toolResult(mode), outBytes
}

// traceStart returns ctx with a StartTrace that logs the phases of a
// sandbox start, should this call start one, and feeds them to the
// metrics.
func (b *Bridge) traceStart(ctx context.Context) context.Context {
	var attrs []any
	var total time.Duration
	return b.metrics.startTrace(ctx, func(name string, took time.Duration) {
		attrs = append(attrs, name, took)
		total += took
		if name == entrypoint.PhaseInit {
			b.log.Info("sandbox started", append([]any{"took", total}, attrs...)...)
		}
	})
}

// startPooled starts the sandbox of a pooled session, traced as a call's.
func (b *Bridge) startPooled(ctx context.Context, cs *clientSession) error {
	err := cs.session.Start(b.traceStart(ctx))
	if ctx.Err() == nil {
		b.metrics.startFailed(err)
	}
	return err
}

// resultStatus returns the status a run_python result carries.
func resultStatus(res *mcp.CallToolResult) string {
	if res == nil {
		return statusError
	}
	if p, ok := res.StructuredContent.(payload); ok && p.Status != "" {
		return p.Status
	}
	if res.IsError {
		return statusError
	}
	return statusSuccess
}

// knownServer reports whether name is a configured MCP server.
func (b *Bridge) knownServer(name string) bool {
	_, ok := b.opts.Registry.lookup(name)
	return ok
}

// sessionIDs returns the maker of Mcp-Session-Id values: 130 random bits
// (26 base32 characters), after replica and a dot when replica is set.
func sessionIDs(replica string) func() string {
	if replica == "" {
		return rand.Text
	}
	return func() string { return replica + "." + rand.Text() }
}
