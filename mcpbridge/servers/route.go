package servers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// Outcomes of a proxied call in audit records, besides the confirmation
// outcomes (Hooks.Confirm's).
const (
	auditOK     = "ok"
	auditError  = "error"
	auditDenied = "denied"
)

// Hooks are what a Route leaves to the bridge: the client session's call
// in progress, a person's confirmation and the audit records.
type Hooks struct {
	// Logger is the client session's log. Zero: the Set's.
	Logger *slog.Logger
	// Call returns the session's run_python call in progress, nil when
	// none is. Zero: none ever is.
	Call func() Call
	// Confirm asks whether the code of the call c (nil: none in
	// progress) may call tool of server with args, as the policy p's
	// verdict v says; it returns the outcome, more fields of the audit
	// record (key, value pairs), and an error wrapping policy.ErrRefused
	// when the call may not run. Required when the policy may confirm.
	Confirm func(ctx context.Context, c Call, p *policy.Policy, v policy.Verdict, server, tool string, args map[string]any) (outcome string, extra []any, err error)
	// Audit writes the audit record of a proxied call of tool of server,
	// its arguments redacted as p says; extra holds more fields, as key,
	// value pairs. Zero: no records.
	Audit func(p *policy.Policy, server, tool string, args map[string]any, began time.Time, outcome string, err error, extra ...any)
}

// A Call is a run_python call in progress, whose proxied calls are
// counted against the policy's max_tool_calls.
type Call interface {
	// CountToolCall counts one more proxied call and returns how many
	// the run_python call made so far.
	CountToolCall() int64
}

// A Route sends a client session's use of a server to the instance it
// may use: the Set's one of a shared server, else its own.
type Route struct {
	set *Set
	own *pool // its instances of the servers that are not shared
	h   Hooks
}

// NewRoute returns the route of one client session's server uses, with
// instances of its own of the servers that are not shared.
func (s *Set) NewRoute(h *Hooks) *Route {
	r := &Route{set: s, h: *h}
	if r.h.Logger == nil {
		r.h.Logger = s.log
	}
	r.own = s.makePool(r.h.Logger, false)
	return r
}

// Close stops the session's own instances of servers.
func (r *Route) Close() { r.own.close() }

// pool returns the pool that runs server name for the session.
func (r *Route) pool(name string) *pool {
	sc, _ := r.set.opts.Registry.Lookup(name) // none: not shared
	return r.poolOf(sc)
}

// poolOf is pool for the server whose configuration is sc.
func (r *Route) poolOf(sc discovery.Server) *pool {
	if sc.Shared {
		return r.set.shared
	}
	return r.own
}

// current returns the session's run_python call in progress, or nil.
func (r *Route) current() Call {
	if r.h.Call == nil {
		return nil
	}
	return r.h.Call()
}

// audit writes the audit record of a proxied call, when records are kept.
func (r *Route) audit(p *policy.Policy, server, tool string, args map[string]any, began time.Time, outcome string, err error, extra ...any) {
	if r.h.Audit != nil {
		r.h.Audit(p, server, tool, args, began, outcome, err, extra...)
	}
}

// Start makes sure every named server runs, starting them concurrently;
// a server the policy forbids to load is refused before any starts.
func (r *Route) Start(ctx context.Context, names []string) error {
	for _, name := range names {
		if _, err := r.Loadable(name); err != nil {
			return err
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		g.Go(func() error { return r.pool(name).start(ctx, []string{name}) })
	}
	return g.Wait()
}

// Loadable returns the policy in force when it lets server name be
// loaded, else why not (a policy that cannot be used included).
func (r *Route) Loadable(name string) (*policy.Policy, error) {
	p, err := r.set.opts.Policy.Current()
	if err != nil {
		return nil, err
	}
	return p, loadRefusal(p, name)
}

// Tools returns the tools of the session's instance of server name that
// the policy lets exist.
func (r *Route) Tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	p, err := r.Loadable(name)
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
func (r *Route) listed(ctx context.Context, name string) ([]*mcp.Tool, error) {
	p, err := r.Loadable(name)
	if err != nil {
		return nil, err
	}
	if sc, ok := r.set.opts.Registry.Lookup(name); ok {
		if tools, stale, ok := r.set.catalog.get(sc); ok {
			if stale {
				r.refresh(name)
			}
			return p.Visible(name, tools), nil
		}
	}
	return r.Tools(ctx, name)
}

// catalogRefreshTimeout bounds listing a server again in the background.
const catalogRefreshTimeout = 2 * time.Minute

// refresh lists server name again in the background, through the
// session's instance of it, so that a catalog read from disk is replaced
// by what the server lists now (put by the instance); one refresh of a
// server at a time.
func (r *Route) refresh(name string) {
	start, done := r.set.catalog.startRefresh(name)
	if !start {
		return
	}
	go func() {
		defer done()
		ctx, cancel := context.WithTimeout(context.Background(), catalogRefreshTimeout)
		defer cancel()
		if _, err := r.pool(name).tools(ctx, name); err != nil {
			r.set.log.Warn("listing a server's tools again for the catalog", "server", name, "err", err)
		}
	}()
}

// Call calls a tool of the session's instance of server name, as the
// policy lets it (denied, bounded in number, confirmed by the user), and
// writes the audit records of the call.
func (r *Route) Call(ctx context.Context, name, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	res, _, err := r.CallTool(ctx, name, tool, args)
	return res, err
}

// CallTool is Call, with the warnings about the result: at most one
// line, when its structured content does not match the tool's output
// schema. A result of a tool without one is observed, when the set
// observes results.
func (r *Route) CallTool(ctx context.Context, name, tool string, args map[string]any) (*mcp.CallToolResult, []string, error) {
	began := time.Now()
	p, err := r.set.opts.Policy.Current()
	audit := func(outcome string, err error, extra ...any) {
		r.audit(p, name, tool, args, began, outcome, err, extra...)
	}
	if err != nil {
		audit(auditDenied, err)
		return nil, nil, err
	}
	ci := r.current()
	if err := countCall(ci, p); err != nil {
		audit(auditDenied, err)
		return nil, nil, err
	}
	v := p.Decide(name, tool)
	switch v.Kind {
	case policy.Deny:
		err := fmt.Errorf("%w: %s.%s is denied: %s%s", policy.ErrRefused, name, tool, v.Rule, p.SourceNote())
		audit(auditDenied, err, "rule", v.Rule)
		return nil, nil, err
	case policy.Confirm:
		outcome, where, err := r.h.Confirm(ctx, ci, p, v, name, tool, args)
		audit(outcome, err, append([]any{"rule", v.Rule}, where...)...)
		if err != nil {
			return nil, nil, err
		}
	}
	// One look at the configuration per call (it stats every location).
	sc, ok := r.set.opts.Registry.Lookup(name)
	if !ok {
		err := notConfigured(name)
		audit(auditError, err)
		return nil, nil, err
	}
	pool := r.poolOf(sc)
	res, err := pool.call(ctx, sc, tool, args)
	switch {
	case err != nil:
		audit(auditError, err)
		return nil, nil, err
	case res.IsError:
		audit(auditError, nil)
		return res, nil, nil
	}
	audit(auditOK, nil)
	t, version := pool.about(sc, tool)
	return res, r.set.results.after(name, version, tool, t, res), nil
}

// denied maps the name and the alias of each tool of server name that
// the policy denies to the tool's name; nil when none is. The sandbox
// makes each a proxy function all the same, whose call goes to the
// bridge, which refuses it (Call) and writes its audit record: the
// sandbox knows which names are denied, not why, and refuses nothing.
func (r *Route) denied(ctx context.Context, name, alias string) map[string]string {
	p, err := r.set.opts.Policy.Current()
	if err != nil || p.RuleFor(name) == nil {
		return nil
	}
	all, err := r.pool(name).tools(ctx, name)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, d := range toolDocs(name, alias, all, false, nil) {
		if p.Decide(name, d.Tool).Kind == policy.Deny {
			out[d.Tool], out[d.ToolAlias] = d.Tool, d.Tool
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// RefuseUnloaded refuses a call of tool of server name, which the session
// has not loaded: past max_tool_calls (every call counts, so that a loop
// of refused calls ends as any loop of calls does), or when the policy
// forbids loading that server, and writes the denied audit record of the
// call; nil when neither (the call is refused all the same, the server
// not being available, but not by the policy).
func (r *Route) RefuseUnloaded(name, tool string, args map[string]any) error {
	began := time.Now()
	p, err := r.set.opts.Policy.Current()
	if err != nil {
		return nil
	}
	if err := countCall(r.current(), p); err != nil {
		r.audit(p, name, tool, args, began, auditDenied, err)
		return err
	}
	ok, rule := p.MayLoad(name)
	if ok {
		return nil
	}
	err = loadRefusal(p, name)
	r.audit(p, name, tool, args, began, auditDenied, err, "rule", rule)
	return err
}

// countCall counts a proxied call of the run_python call ci (nil: none
// in progress) and refuses it past the policy's max_tool_calls.
func countCall(ci Call, p *policy.Policy) error {
	if ci == nil {
		return nil
	}
	if n := ci.CountToolCall(); n > int64(p.CallLimit()) {
		return fmt.Errorf("%w: more than %d proxied tool calls in one run_python call (max_tool_calls%s)",
			policy.ErrRefused, p.CallLimit(), p.SourceNote())
	}
	return nil
}

// loadRefusal returns why the policy forbids loading server, or nil.
func loadRefusal(p *policy.Policy, server string) error {
	if ok, rule := p.MayLoad(server); !ok {
		return fmt.Errorf("%w: the server %s may not be loaded: %s%s", policy.ErrRefused, pyname.Repr(server), rule, p.SourceNote())
	}
	return nil
}
