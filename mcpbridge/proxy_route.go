package mcpbridge

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
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
	if sc, ok := r.b.opts.Registry.lookup(name); ok && sc.Shared {
		return r.b.shared
	}
	return r.cs.own
}

// start makes sure every named server runs, starting them concurrently.
func (r proxyRoute) start(ctx context.Context, names []string) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		g.Go(func() error { return r.pool(name).start(ctx, []string{name}) })
	}
	return g.Wait()
}

// tools returns the tools of the session's instance of server name.
func (r proxyRoute) tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	return r.pool(name).tools(ctx, name)
}

// listed returns the tools server name lists: the catalog's when an
// instance of it listed them already, else those of the session's
// instance, started for it.
func (r proxyRoute) listed(ctx context.Context, name string) ([]*mcp.Tool, error) {
	if sc, ok := r.b.opts.Registry.lookup(name); ok {
		if tools, ok := r.b.catalog.get(sc); ok {
			return tools, nil
		}
	}
	return r.tools(ctx, name)
}

// call calls a tool of the session's instance of server name.
func (r proxyRoute) call(ctx context.Context, name, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return r.pool(name).call(ctx, name, tool, args)
}
