package mcpbridge

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// defaultSearchLimit is how many tools a search returns when its request
// gives no positive limit; search_tool_docs in the sandbox API defaults
// to the same (SEARCH_LIMIT in sandbox_api.py).
const defaultSearchLimit = 5

// searchConcurrency bounds the servers a search starts at once.
const searchConcurrency = 8

// searchDocs ranks the tools of every configured server (starting the
// ones not yet running, concurrently) against query: the best limit of
// them (defaultSearchLimit when limit is not positive); full adds their
// input schemas.
func (b *Bridge) searchDocs(ctx context.Context, proxies proxyRoute, query string, limit int, full bool) (any, error) {
	if _, err := b.policy.current(); err != nil {
		return nil, err
	}
	al := b.serverAliases()
	servers := b.opts.Registry.servers()
	toolsOf := make([][]*mcp.Tool, len(servers))
	var g errgroup.Group
	g.SetLimit(searchConcurrency)
	for i, sc := range servers {
		g.Go(func() error {
			tools, err := proxies.listed(ctx, sc.Name)
			if errors.Is(err, ErrPolicy) {
				return nil // a server the policy forbids is not searched
			}
			if err != nil {
				b.log.Warn("search skips a server that does not start", "server", sc.Name, "err", err)
				return nil
			}
			toolsOf[i] = tools
			return nil
		})
	}
	g.Wait()
	var docs []toolDoc
	var schemas []any
	for i, sc := range servers {
		docs = append(docs, toolDocs(sc.Name, al[sc.Name], toolsOf[i], full)...)
		for _, t := range toolsOf[i] {
			schemas = append(schemas, t.InputSchema)
		}
	}
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	return map[string]any{"results": searchTools(query, docs, schemas, limit)}, nil
}

// stopwords carry no meaning in a search for a tool.
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "for": true, "and": true, "or": true,
	"in": true, "on": true, "with": true, "my": true, "me": true, "i": true, "it": true, "its": true,
	"s": true, "some": true, "this": true, "that": true, "from": true, "by": true, "into": true, "all": true,
	"want": true, "need": true, "please": true, "how": true, "do": true, "can": true, "new": true,
}

// synonyms widen a query word to the words tools use for it.
var synonyms = map[string][]string{
	"read":      {"get", "open", "load", "fetch", "view", "show", "cat"},
	"get":       {"read", "fetch", "retrieve", "show"},
	"content":   {"read", "text", "body"},
	"write":     {"save", "create", "put", "store", "edit"},
	"save":      {"write", "store", "create"},
	"create":    {"add", "new", "make", "open", "write"},
	"open":      {"create", "read"},
	"delete":    {"remove", "rm", "erase"},
	"remove":    {"delete", "rm"},
	"list":      {"ls", "enumerate", "browse", "directory", "tree"},
	"search":    {"find", "query", "lookup", "grep"},
	"find":      {"search", "query", "lookup"},
	"file":      {"path", "document", "files"},
	"directory": {"folder", "dir", "list"},
	"folder":    {"directory", "dir"},
	"move":      {"rename", "mv"},
	"rename":    {"move"},
	"add":       {"create", "sum", "plus", "insert"},
	"sum":       {"add", "total", "plus"},
	"echo":      {"repeat", "say"},
	"pull":      {"pr", "merge"},
	"request":   {"pr"},
	"pr":        {"pull", "request"},
	"issue":     {"ticket", "bug"},
	"entity":    {"entities", "node"},
	"relation":  {"relations", "edge", "link"},
	"graph":     {"knowledge", "memory"},
	"image":     {"picture", "png", "photo"},
	"info":      {"metadata", "stat", "details"},
	"metadata":  {"info", "stat"},
}

// words splits text into lowercase words, breaking on punctuation, "_",
// "-" and camelCase, each lightly stemmed.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, stem(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range text {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			cur = append(cur, unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
			prevLower = unicode.IsLower(r)
		case r == '\'':
			// "file's" → "file"
			flush()
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return out
}

// stem strips common English endings so "files", "reading" and "read" meet.
func stem(w string) string {
	for _, suf := range []string{"ies", "ing", "es", "ed", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			if suf == "ies" {
				return w[:len(w)-3] + "y"
			}
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// expand returns the stemmed synonyms of a query word.
func expand(w string) []string {
	var out []string
	for _, s := range synonyms[w] {
		out = append(out, stem(s))
	}
	return out
}

// searchTools ranks docs by relevance to query: a query word (or its
// synonym) in the tool name counts most, then in parameter names (those
// of schemas[i], the input schema of docs[i]), then in the description;
// every query word need not appear. Best first, at most limit (0: all);
// docs with no match are dropped.
func searchTools(query string, docs []toolDoc, schemas []any, limit int) []toolDoc {
	var terms []string
	for _, w := range words(query) {
		if !stopwords[w] {
			terms = append(terms, w)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	type scored struct {
		doc   toolDoc
		score int
	}
	var hits []scored
	for i, d := range docs {
		name := words(d.Tool)
		desc := words(d.Description)
		params := words(strings.Join(schemaParams(schemas[i]), " "))
		score := 0
		matched := 0
		for _, t := range terms {
			best := 0
			for k, variant := range append([]string{t}, expand(t)...) {
				weight := 1
				if k == 0 {
					weight = 2 // the word itself beats a synonym
				}
				switch {
				case slices.Contains(name, variant):
					best = max(best, 6*weight)
				case slices.Contains(params, variant):
					best = max(best, 3*weight)
				case slices.Contains(desc, variant):
					best = max(best, 2*weight)
				case k == 0 && len(t) >= 4 && strings.Contains(strings.ToLower(d.Tool+" "+d.Description), t):
					best = max(best, 1)
				}
			}
			if best > 0 {
				matched++
			}
			score += best
		}
		if score > 0 {
			score += 4 * matched * matched // covering more of the query wins
			hits = append(hits, scored{d, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		if hits[i].doc.Server != hits[j].doc.Server {
			return hits[i].doc.Server < hits[j].doc.Server
		}
		return hits[i].doc.Tool < hits[j].doc.Tool
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]toolDoc, len(hits))
	for i, h := range hits {
		out[i] = h.doc
		out[i].Score = h.score
	}
	return out
}

// schemaParams returns the property names of a JSON schema, sorted; none
// for a schema that is not an object or has no properties.
func schemaParams(schema any) []string {
	m, err := schemaObject(schema)
	if err != nil {
		return nil
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
