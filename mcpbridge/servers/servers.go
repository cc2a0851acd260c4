// Package servers runs the MCP servers the bridge proxies for sandbox
// code: the instances each client session starts and the ones every
// session shares, the route of a session's calls to them under the tool
// policy, the catalog of the tools they listed, their docs and search, and
// the metadata of their tools the sandbox API turns into proxy functions.
//
// The bridge calls it; what it needs of the bridge (the events of a call,
// the counting of calls, a person's confirmation, the audit records) it is
// given as options and hooks.
package servers

import (
	"cmp"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/shapes"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// Options configure a Set. Registry is required.
type Options struct {
	// Registry is the configured servers.
	Registry *discovery.Registry
	// Policy is the tool policy every use of a server is held to. Zero:
	// none, everything allowed.
	Policy *policy.File
	// Keywords is the operator's search keywords file (nil: none).
	Keywords *toolsearch.KeywordsFile
	// Version is the bridge's version, announced to the servers.
	Version string
	// Logger receives the servers' progress and their stderr (at DEBUG).
	// Zero: discarded.
	Logger *slog.Logger
	// Events sends the notable events of a call (a server restarted, a
	// call cancelled) to the client whose call ctx is. Zero: none sent.
	Events Events
	// Counted is told the outcome of every proxied call (ok, error,
	// cancelled, timeout). Zero: not counted.
	Counted func(server, tool, outcome string)
	// SearchWait bounds how long a search waits for servers that are in
	// no catalog yet to start and list their tools; those still starting
	// are left out, said so in the notes, and found by a later search.
	// Zero: 10 seconds.
	SearchWait time.Duration
	// ObserveResults records the shapes of the results of tools that
	// declare no output schema (keys and value types, never values), kept
	// in the state directory's "shapes", and shows them in the tools'
	// docs. Zero: neither recorded nor shown.
	ObserveResults bool
}

// defaultSearchWait is the default of Options.SearchWait.
const defaultSearchWait = 10 * time.Second

// A Set is the configured servers as the bridge proxies them: the
// instances every client session shares (entries with "shared": true) and
// the catalog of the tools every server listed last. Each client session
// reaches them through a Route of its own.
type Set struct {
	opts    Options
	log     *slog.Logger
	catalog *catalog // the tools every server listed last
	shared  *pool    // the instances of the servers every session shares
	results results  // what is known of the tools' results
}

// New returns the Set of the servers opts configures; nothing starts until
// a client session uses a server. Its catalog is kept in the registry's
// state directory.
func New(opts *Options) *Set {
	s := &Set{opts: *opts}
	s.opts.SearchWait = cmp.Or(s.opts.SearchWait, defaultSearchWait)
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.catalog = newCatalog(filepath.Join(s.opts.Registry.StateDir(), "catalog"), s.log)
	if s.opts.ObserveResults {
		s.results.observed = shapes.NewStore(&shapes.StoreOptions{Dir: filepath.Join(s.opts.Registry.StateDir(), "shapes"), Logger: s.log})
	}
	s.shared = s.makePool(s.log, true)
	return s
}

// makePool returns a pool of the set's servers that logs to log.
func (s *Set) makePool(log *slog.Logger, shared bool) *pool {
	p := newPool(s.opts.Registry, s.opts.Version, log, s.catalog, shared)
	p.events, p.counted = s.opts.Events, s.opts.Counted
	return p
}

// Close stops the shared servers (each Route stops its own) and keeps
// the shapes observed.
func (s *Set) Close() {
	s.shared.close()
	s.results.observed.Close()
}

// Known reports whether name is a configured MCP server.
func (s *Set) Known(name string) bool {
	_, ok := s.opts.Registry.Lookup(name)
	return ok
}

// Discovered lists the configured servers the policy lets be loaded,
// with their descriptions, sorted by name as the original lists them.
func (s *Set) Discovered() ([]map[string]string, error) {
	p, err := s.opts.Policy.Current()
	if err != nil {
		return nil, err
	}
	out := []map[string]string{}
	for _, sc := range s.opts.Registry.Servers() {
		if ok, _ := p.MayLoad(sc.Name); !ok {
			continue
		}
		out = append(out, map[string]string{"name": sc.Name, "description": sc.Description, "cwd": sc.Cwd})
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["name"] < out[j]["name"] })
	return out, nil
}

// aliases maps every configured server to its alias.
func (s *Set) aliases() map[string]string {
	var names []string
	for _, sc := range s.opts.Registry.Servers() {
		names = append(names, sc.Name)
	}
	al := pyname.Aliases(names, "server")
	m := make(map[string]string, len(names))
	for i, n := range names {
		m[n] = al[i]
	}
	return m
}
