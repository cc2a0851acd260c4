package mcpbridge

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pythonKeywords is keyword.kwlist of CPython 3.10–3.14: names that
// cannot be identifiers (aliases, parameters). Soft keywords (match,
// case, type, _) can.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// identifier turns a name into a lowercase Python identifier: other
// characters become "_", a leading digit gets a "_" before it, a keyword
// a "_" after it.
func identifier(name, fallback string) string {
	var b strings.Builder
	lastUnderscore := false
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			lastUnderscore = false
		} else if !lastUnderscore {
			b.WriteByte('_')
			lastUnderscore = true
		}
	}
	s := b.String()
	if strings.Trim(s, "_") == "" {
		s = fallback
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	if pythonKeywords[s] {
		s += "_"
	}
	return s
}

// aliases assigns identifiers to names in order, "_2", "_3", … on
// collisions.
func aliases(names []string, fallback string) []string {
	used := map[string]bool{}
	out := make([]string, len(names))
	for i, n := range names {
		base := identifier(n, fallback)
		a := base
		for k := 2; used[a]; k++ {
			a = base + "_" + strconv.Itoa(k)
		}
		used[a] = true
		out[i] = a
	}
	return out
}

// A toolDoc documents one tool of one server.
type toolDoc struct {
	Server      string `json:"server"`
	ServerAlias string `json:"serverAlias"`
	Tool        string `json:"tool"`
	ToolAlias   string `json:"toolAlias"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema,omitempty"`
	Score       int    `json:"score,omitempty"`
}

// toolDocs documents the tools of a server; full adds input schemas.
func toolDocs(server, serverAlias string, tools []*mcp.Tool, full bool) []toolDoc {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	al := aliases(names, "tool")
	docs := make([]toolDoc, len(tools))
	for i, t := range tools {
		docs[i] = toolDoc{Server: server, ServerAlias: serverAlias, Tool: t.Name, ToolAlias: al[i], Description: t.Description}
		if full {
			docs[i].InputSchema = t.InputSchema
		}
	}
	return docs
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

// searchTools ranks docs by relevance to query: a query word (or its
// synonym) in the tool name counts most, then in parameter names, then in
// the description; every query word need not appear. Best first; docs with
// no match are dropped.
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

func expand(w string) []string {
	var out []string
	for _, s := range synonyms[w] {
		out = append(out, stem(s))
	}
	return out
}

// schemaParams returns the property names of a JSON schema.
func schemaParams(schema any) []string {
	m, ok := toMap(schema)
	if !ok {
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
