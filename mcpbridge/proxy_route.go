package mcpbridge

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// A proxyRoute sends a client session's use of a server to the instance
// it may use: the bridge's one of a shared server, else its own.
type proxyRoute struct {
	b  *Bridge
	cs *clientSession
}

// proxiesOf returns the route of cs's server uses.
func (b *Bridge) proxiesOf(cs *clientSession) proxyRoute { return proxyRoute{b: b, cs: cs} }

// pool returns the pool that runs server name for the session.
func (r proxyRoute) pool(name string) *proxyPool {
	sc, _ := r.b.opts.Registry.Lookup(name) // none: not shared
	return r.poolOf(sc)
}

// poolOf is pool for the server whose configuration is sc.
func (r proxyRoute) poolOf(sc discovery.Server) *proxyPool {
	if sc.Shared {
		return r.b.shared
	}
	return r.cs.own
}

// start makes sure every named server runs, starting them concurrently;
// a server the policy forbids to load is refused before any starts.
func (r proxyRoute) start(ctx context.Context, names []string) error {
	for _, name := range names {
		if _, err := r.loadable(name); err != nil {
			return err
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		g.Go(func() error { return r.pool(name).start(ctx, []string{name}) })
	}
	return g.Wait()
}

// loadable returns the policy in force when it lets server name be
// loaded, else why not (a policy that cannot be used included).
func (r proxyRoute) loadable(name string) (*policy.Policy, error) {
	p, err := r.b.policy.Current()
	if err != nil {
		return nil, err
	}
	return p, loadRefusal(p, name)
}

// tools returns the tools of the session's instance of server name that
// the policy lets exist.
func (r proxyRoute) tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	p, err := r.loadable(name)
	if err != nil {
		return nil, err
	}
	tools, err := r.pool(name).tools(ctx, name)
	return p.Visible(name, tools), err
}

// listed returns the tools server name lists: the catalog's when an
// instance of it listed them already, else those of the session's
// instance, started for it. The policy is asked first, so that a server
// it forbids is neither started nor listed again in the background.
func (r proxyRoute) listed(ctx context.Context, name string) ([]*mcp.Tool, error) {
	p, err := r.loadable(name)
	if err != nil {
		return nil, err
	}
	if sc, ok := r.b.opts.Registry.Lookup(name); ok {
		if tools, stale, ok := r.b.catalog.get(sc); ok {
			if stale {
				r.refresh(name)
			}
			return p.Visible(name, tools), nil
		}
	}
	return r.tools(ctx, name)
}

// catalogRefreshTimeout bounds listing a server again in the background.
const catalogRefreshTimeout = 2 * time.Minute

// refresh lists server name again in the background, through the
// session's instance of it, so that a catalog read from disk is replaced
// by what the server lists now (put by the instance); one refresh of a
// server at a time.
func (r proxyRoute) refresh(name string) {
	start, done := r.b.catalog.startRefresh(name)
	if !start {
		return
	}
	go func() {
		defer done()
		ctx, cancel := context.WithTimeout(context.Background(), catalogRefreshTimeout)
		defer cancel()
		if _, err := r.pool(name).tools(ctx, name); err != nil {
			r.b.log.Warn("listing a server's tools again for the catalog", "server", name, "err", err)
		}
	}()
}

// call calls a tool of the session's instance of server name, as the
// policy lets it (denied, bounded in number, confirmed by the user), and
// writes the audit records of the call.
func (r proxyRoute) call(ctx context.Context, name, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	began := time.Now()
	p, err := r.b.policy.Current()
	audit := func(outcome string, err error, extra ...any) {
		r.b.auditToolCall(r.cs, p, name, tool, args, began, outcome, err, extra...)
	}
	if err != nil {
		audit(outcomeDenied, err)
		return nil, err
	}
	ci := r.cs.current.Load()
	if err := countCall(ci, p); err != nil {
		audit(outcomeDenied, err)
		return nil, err
	}
	v := p.Decide(name, tool)
	switch v.Kind {
	case policy.Deny:
		err := fmt.Errorf("%w: %s.%s is denied: %s%s", ErrPolicy, name, tool, v.Rule, p.SourceNote())
		audit(outcomeDenied, err, "rule", v.Rule)
		return nil, err
	case policy.Confirm:
		outcome, where, err := r.b.confirm(ctx, ci, p, v, r.cs.name, name, tool, args)
		audit(outcome, err, append([]any{"rule", v.Rule}, where...)...)
		if err != nil {
			return nil, err
		}
	}
	// One look at the configuration per call (it stats every location).
	sc, ok := r.b.opts.Registry.Lookup(name)
	if !ok {
		err := notConfigured(name)
		audit(outcomeError, err)
		return nil, err
	}
	res, err := r.poolOf(sc).call(ctx, sc, tool, args)
	switch {
	case err != nil:
		audit(outcomeError, err)
	case res.IsError:
		audit(outcomeError, nil)
	default:
		audit(outcomeOK, nil)
	}
	return res, err
}

// denied maps the name and the alias of each tool of server name that
// the policy denies to the tool's name; nil when none is. The sandbox
// makes each a proxy function all the same, whose call goes to the
// bridge, which refuses it (call) and writes its audit record: the
// sandbox knows which names are denied, not why, and refuses nothing.
func (r proxyRoute) denied(ctx context.Context, name, alias string) map[string]string {
	p, err := r.b.policy.Current()
	if err != nil || p.RuleFor(name) == nil {
		return nil
	}
	all, err := r.pool(name).tools(ctx, name)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, d := range toolDocs(name, alias, all, false) {
		if p.Decide(name, d.Tool).Kind == policy.Deny {
			out[d.Tool], out[d.ToolAlias] = d.Tool, d.Tool
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// refuseUnloaded refuses a call of tool of server name, which the session
// has not loaded: past max_tool_calls (every call counts, so that a loop
// of refused calls ends as any loop of calls does), or when the policy
// forbids loading that server, and writes the denied audit record of the
// call; nil when neither (the call is refused all the same, the server
// not being available, but not by the policy).
func (r proxyRoute) refuseUnloaded(name, tool string, args map[string]any) error {
	began := time.Now()
	p, err := r.b.policy.Current()
	if err != nil {
		return nil
	}
	if err := countCall(r.cs.current.Load(), p); err != nil {
		r.b.auditToolCall(r.cs, p, name, tool, args, began, outcomeDenied, err)
		return err
	}
	ok, rule := p.MayLoad(name)
	if ok {
		return nil
	}
	err = loadRefusal(p, name)
	r.b.auditToolCall(r.cs, p, name, tool, args, began, outcomeDenied, err, "rule", rule)
	return err
}

// countCall counts a proxied call of the run_python call ci (nil: none
// in progress) and refuses it past the policy's max_tool_calls.
func countCall(ci *callInfo, p *policy.Policy) error {
	if ci == nil {
		return nil
	}
	if n := ci.toolCalls.Add(1); n > int64(p.CallLimit()) {
		return fmt.Errorf("%w: more than %d proxied tool calls in one run_python call (max_tool_calls%s)",
			ErrPolicy, p.CallLimit(), p.SourceNote())
	}
	return nil
}

// loadRefusal returns why the policy forbids loading server, or nil.
func loadRefusal(p *policy.Policy, server string) error {
	if ok, rule := p.MayLoad(server); !ok {
		return fmt.Errorf("%w: the server %s may not be loaded: %s%s", ErrPolicy, pyname.Repr(server), rule, p.SourceNote())
	}
	return nil
}

// knownServer reports whether name is a configured MCP server.
func (b *Bridge) knownServer(name string) bool {
	_, ok := b.opts.Registry.Lookup(name)
	return ok
}
