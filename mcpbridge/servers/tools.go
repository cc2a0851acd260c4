package servers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// defaultSearchLimit is how many tools a search returns when its request
// gives no positive limit; search_tool_docs in the sandbox API defaults
// to the same (SEARCH_LIMIT in sandbox_api.py).
const defaultSearchLimit = 5

// searchConcurrency bounds the servers a search starts at once.
const searchConcurrency = 8

// Search ranks the tools of every configured server against query: from
// the catalog (memory, else disk) when a server is in it, else by starting
// it through the session's route (concurrently, at most
// Options.SearchWait). The result holds the best limit tools
// (defaultSearchLimit when limit is not positive); full adds their input
// schemas; notes name the servers left out and why.
func (r *Route) Search(ctx context.Context, query string, limit int, full bool) (any, error) {
	if _, err := r.set.opts.Policy.Current(); err != nil {
		return nil, err
	}
	al := r.set.aliases()
	servers := r.set.opts.Registry.Servers()
	toolsOf := make([][]*mcp.Tool, len(servers))
	notes := make([]string, len(servers))
	wctx, cancel := context.WithTimeout(ctx, r.set.opts.SearchWait)
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
				tools, err := r.listed(lctx, sc.Name)
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
			case errors.Is(err, policy.ErrRefused):
				// a server the policy forbids is not searched
			case err != nil:
				r.set.log.Warn("search skips a server that does not start", "server", sc.Name, "err", err)
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
	extra, err := r.set.opts.Keywords.Current()
	if err != nil {
		notes = append(notes, err.Error())
	}
	for i, sc := range servers {
		docs = append(docs, toolDocs(sc.Name, al[sc.Name], toolsOf[i], full, r.set.returnsOf(sc.Name))...)
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

// Docs documents the tools of a configured server, or only its tool
// called (or aliased) tool when that is not empty; full adds their input
// schemas.
func (r *Route) Docs(ctx context.Context, server, tool string, full bool) (any, error) {
	alias, ok := r.set.aliases()[server]
	if !ok {
		//lint:ignore ST1005 the original's wording, which sandbox code may match
		return nil, fmt.Errorf("Server %s is not configured", pyname.Repr(server))
	}
	tools, err := r.listed(ctx, server)
	if err != nil {
		return nil, err
	}
	docs := toolDocs(server, alias, tools, full, r.set.returnsOf(server))
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

// A ToolMeta describes one tool of a loaded server to the sandbox API.
type ToolMeta struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"`
	Description string `json:"description"`
	InputSchema any    `json:"input_schema"`
	// Params are the decoded input schema the sandbox turns into the
	// tool's signature.
	Params []Param `json:"params"`
	// Returns and ReturnsObserved are toolDoc's: the shape of what the
	// tool returns, and the calls an observed one rests on.
	Returns         string `json:"returns,omitempty"`
	ReturnsObserved int    `json:"returns_observed,omitempty"`
}

// A ServerMeta describes one loaded server to the sandbox API.
type ServerMeta struct {
	Name        string     `json:"name"`
	Alias       string     `json:"alias"`
	Description string     `json:"description"`
	Cwd         string     `json:"cwd"`
	Tools       []ToolMeta `json:"tools"`
	// Denied maps the names and aliases of the tools the policy denies
	// to their names: naming one gives a proxy function whose call the
	// bridge refuses, with a denied audit record, and which then raises
	// MCPToolDenied with the bridge's message (not an AttributeError
	// saying there is no such tool). They are in no list, doc or search.
	Denied map[string]string `json:"denied,omitempty"`
}

// Meta describes the servers the session loaded, in load order, for the
// sandbox API to install their proxies: their tools as the session's
// instances list them and the policy lets exist, and the names of those
// it denies.
func (r *Route) Meta(ctx context.Context, loaded []string) []ServerMeta {
	al := r.set.aliases()
	servers := []ServerMeta{}
	for _, name := range loaded {
		sc, _ := r.set.opts.Registry.Lookup(name)
		tools, err := r.Tools(ctx, name)
		if err != nil {
			r.set.log.Warn("loaded server has no tools to install", "server", name, "err", err)
		}
		m := ServerMeta{Name: name, Alias: al[name], Description: sc.Description, Cwd: sc.Cwd, Tools: []ToolMeta{}}
		for _, d := range toolDocs(name, al[name], tools, true, r.set.returnsOf(name)) {
			params, err := ParamsOf(d.InputSchema)
			if err != nil {
				r.set.log.Warn("a tool's input schema is unusable; it gets no signature and its arguments are not checked",
					"server", name, "tool", d.Tool, "err", err)
			}
			if params == nil {
				params = []Param{}
			}
			m.Tools = append(m.Tools, ToolMeta{Name: d.Tool, Alias: d.ToolAlias, Description: d.Description, InputSchema: d.InputSchema, Params: params,
				Returns: d.Returns, ReturnsObserved: d.ReturnsObserved})
		}
		m.Denied = r.denied(ctx, name, al[name])
		servers = append(servers, m)
	}
	return servers
}

// returnsOf returns what the tools of server return, for their docs.
func (s *Set) returnsOf(server string) returnsFunc {
	return func(t *mcp.Tool) (string, int) { return s.results.returns(server, t) }
}
