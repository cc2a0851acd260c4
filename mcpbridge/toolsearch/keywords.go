package toolsearch

import (
	"strings"
	"sync"
)

// A toolKeywordEntry holds the tool keywords of one tool of a well-known
// MCP server: the words people use for it when they need it without
// using its own words (synonyms of its action and objects, informal
// verbs, the product's category names, goals it serves). A search
// indexes them as a field of that tool alone (fieldKeywords), document
// expansion as in doc2query: unlike a synonym, which widens a query word
// for every tool, a tool keyword reaches one tool.
//
// A tool is known by its name and the first sentence of its description
// (compared with case and spacing folded), so that a server named
// anything in the configuration finds its tools' keywords, and a tool
// whose description changed in a new version finds none rather than
// someone else's.
type toolKeywordEntry struct {
	tool    string // the tool's name
	summary string // the first sentence of its description
	words   string // its keywords, separated by spaces
}

// toolKeywords finds the keywords of a tool by its name, built from
// toolKeywordData on first use.
var toolKeywords = sync.OnceValue(func() map[string][]toolKeywordEntry {
	data := toolKeywordData()
	m := make(map[string][]toolKeywordEntry, len(data))
	for _, a := range data {
		m[a.tool] = append(m[a.tool], a)
	}
	return m
})

// keywordsOf are the tool keywords of the tool named tool whose
// description's first sentence is summary; "" when none are known.
func keywordsOf(tool, summary string) string {
	cands := toolKeywords()[tool]
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
