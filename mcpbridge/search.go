package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// defaultSearchLimit is how many tools a search returns when its request
// gives no positive limit; search_tool_docs in the sandbox API defaults
// to the same (SEARCH_LIMIT in sandbox_api.py).
const defaultSearchLimit = 5

// searchConcurrency bounds the servers a search starts at once.
const searchConcurrency = 8

// searchWait bounds how long a search waits for servers that are in no
// catalog yet to start and list their tools; those still starting are
// left out, said so in the notes, and found by a later search.
var searchWait = 10 * time.Second

// searchDocs ranks the tools of every configured server against query:
// from the catalog (memory, else disk) when a server is in it, else by
// starting it (concurrently, at most searchWait). The result holds the
// best limit tools (defaultSearchLimit when limit is not positive); full
// adds their input schemas; notes name the servers left out and why.
func (b *Bridge) searchDocs(ctx context.Context, proxies proxyRoute, query string, limit int, full bool) (any, error) {
	if _, err := b.policy.Current(); err != nil {
		return nil, err
	}
	al := b.serverAliases()
	servers := b.opts.Registry.Servers()
	toolsOf := make([][]*mcp.Tool, len(servers))
	notes := make([]string, len(servers))
	wctx, cancel := context.WithTimeout(ctx, searchWait)
	defer cancel()
	var g errgroup.Group
	g.SetLimit(searchConcurrency)
	for i, sc := range servers {
		g.Go(func() error {
			// The listing goes on past the wait (its start is not
			// wasted: the catalog gets its tools for the next search).
			type listing struct {
				tools []*mcp.Tool
				err   error
			}
			done := make(chan listing, 1)
			go func() {
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), catalogRefreshTimeout)
				defer cancel()
				tools, err := proxies.listed(lctx, sc.Name)
				done <- listing{tools, err}
			}()
			var l listing
			select {
			case l = <-done:
			case <-wctx.Done():
				if ctx.Err() == nil {
					notes[i] = fmt.Sprintf("server %s is still starting; its tools were not searched (search again shortly)", pyname.Repr(sc.Name))
				}
				return nil
			}
			tools, err := l.tools, l.err
			switch {
			case errors.Is(err, ErrPolicy):
				// a server the policy forbids is not searched
			case err != nil:
				b.log.Warn("search skips a server that does not start", "server", sc.Name, "err", err)
				notes[i] = fmt.Sprintf("server %s was not searched: %v", pyname.Repr(sc.Name), err)
			default:
				toolsOf[i] = tools
			}
			return nil
		})
	}
	g.Wait()
	var docs []toolDoc
	var sdocs []toolsearch.Doc
	extra, err := b.searchKeywords.Current()
	if err != nil {
		notes = append(notes, err.Error())
	}
	for i, sc := range servers {
		docs = append(docs, toolDocs(sc.Name, al[sc.Name], toolsOf[i], full)...)
		words := extra[sc.Name]
		for _, t := range toolsOf[i] {
			sdocs = append(sdocs, toolsearch.Doc{Server: sc.Name, ServerAlias: al[sc.Name], Tool: t.Name, Title: t.Title,
				Description: t.Description, Keywords: words[t.Name], Schema: t.InputSchema})
		}
	}
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	hits := toolsearch.Rank(query, sdocs, limit)
	results := make([]toolDoc, len(hits))
	for i, h := range hits {
		results[i] = docs[h.Doc]
		results[i].Score = h.Score
	}
	res := map[string]any{"results": results}
	if notes = slices.DeleteFunc(notes, func(n string) bool { return n == "" }); len(notes) > 0 {
		res["notes"] = notes
	}
	return res, nil
}

// serverAliases maps every configured server to its alias.
func (b *Bridge) serverAliases() map[string]string {
	var names []string
	for _, sc := range b.opts.Registry.Servers() {
		names = append(names, sc.Name)
	}
	al := pyname.Aliases(names, "server")
	m := make(map[string]string, len(names))
	for i, n := range names {
		m[n] = al[i]
	}
	return m
}

// queryDocs documents the tools of a configured server, or only its tool
// called (or aliased) tool when that is not empty; full adds their input
// schemas.
func (b *Bridge) queryDocs(ctx context.Context, proxies proxyRoute, server, tool string, full bool) (any, error) {
	alias, ok := b.serverAliases()[server]
	if !ok {
		return nil, fmt.Errorf("Server %s is not configured", pyname.Repr(server))
	}
	tools, err := proxies.listed(ctx, server)
	if err != nil {
		return nil, err
	}
	docs := toolDocs(server, alias, tools, full)
	if tool != "" {
		match := func(d toolDoc) bool { return d.Tool == tool || d.ToolAlias == tool }
		if !slices.ContainsFunc(docs, match) {
			// As the original: a tool's name or alias in any case.
			match = func(d toolDoc) bool { return strings.EqualFold(d.Tool, tool) || strings.EqualFold(d.ToolAlias, tool) }
		}
		docs = slices.DeleteFunc(docs, func(d toolDoc) bool { return !match(d) })
		if len(docs) == 0 {
			return nil, fmt.Errorf("server %q has no tool %q", server, tool)
		}
	}
	return map[string]any{"docs": docs}, nil
}
