package mcpbridge

import (
	"strings"
	"sync"
)

// A toolAlias holds the words people use for one tool of a well-known
// MCP server when they need it without using its own words: synonyms of
// its action and objects, informal verbs, the product's category names,
// goals it serves. A search indexes them as a field of that tool alone
// (fieldAlias), document expansion as in doc2query: unlike a synonym,
// which widens a query word for every tool, an alias reaches one tool.
//
// A tool is known by its name and the first sentence of its description
// (compared with case and spacing folded), so that a server named
// anything in the configuration finds its tools' aliases, and a tool
// whose description changed in a new version finds none rather than
// someone else's.
type toolAlias struct {
	tool    string // the tool's name
	summary string // the first sentence of its description
	words   string // its aliases, separated by spaces
}

// toolAliases finds the aliases of a tool by its name, built from
// toolAliasData on first use.
var toolAliases = sync.OnceValue(func() map[string][]toolAlias {
	m := make(map[string][]toolAlias, len(toolAliasData))
	for _, a := range toolAliasData {
		m[a.tool] = append(m[a.tool], a)
	}
	return m
})

// aliasWords are the aliases of the tool named tool whose description's
// first sentence is summary; "" when none are known.
func aliasWords(tool, summary string) string {
	cands := toolAliases()[tool]
	if len(cands) == 0 {
		return ""
	}
	s := foldSummary(summary)
	for _, a := range cands {
		if foldSummary(a.summary) == s {
			return a.words
		}
	}
	return ""
}

// foldSummary folds case and spacing, and a final full stop.
func foldSummary(s string) string {
	return strings.TrimSuffix(strings.Join(strings.Fields(strings.ToLower(s)), " "), ".")
}
