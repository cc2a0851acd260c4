package toolsearch

// The hand-written tables of data/ (data/README.md): the tool keywords
// and the word groups, parsed on first use.

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

//go:embed data/tool_keywords.json data/actions.txt data/things.txt data/concepts.txt data/terms.txt
var dataFiles embed.FS

// A toolKeywordServer is one server's entries of data/tool_keywords.json:
// the server (npm package and version) whose tools/list they were written
// from (the search evaluation's recordings, testdata/searcheval/servers).
type toolKeywordServer struct {
	Server  string `json:"server"`
	Package string `json:"package"`
	Tools   []struct {
		Tool     string `json:"tool"`
		Summary  string `json:"summary"`
		Keywords string `json:"keywords"`
	} `json:"tools"`
}

// toolKeywordData is toolKeywords' table, data/tool_keywords.json: a
// tool's name, the first sentence of its description, and its keywords,
// in the order of the file. Written from the tools' lists alone, by
// authors who never saw the evaluation's queries (README, "How tool
// search works"); TestToolKeywordData checks each entry against the
// recorded tools.
var toolKeywordData = sync.OnceValue(func() []toolKeywordEntry {
	var servers []toolKeywordServer
	if err := json.Unmarshal(mustRead("data/tool_keywords.json"), &servers); err != nil {
		panic(fmt.Sprintf("toolsearch: parsing data/tool_keywords.json: %v", err))
	}
	var out []toolKeywordEntry
	for _, s := range servers {
		for _, t := range s.Tools {
			out = append(out, toolKeywordEntry{tool: t.Tool, summary: t.Summary, words: t.Keywords})
		}
	}
	return out
})

// The word tables of data/, each parsed on first use (parseWordTable):
//
//   - actionWords (data/actions.txt) group the words an agent may use for
//     an action under the words MCP tools name that action by;
//   - thingWords (data/things.txt) do the same for things;
//   - conceptWords (data/concepts.txt) for needs: everyday words, jargon,
//     abbreviations and idioms (options.NoConcepts leaves them out);
//   - handSynonyms (data/terms.txt) widen a word an agent may use to the
//     words tools use for it, where WordNet lacks them: their keys are
//     the query's words, the groups' keys the tools' words.
var (
	actionWords  = sync.OnceValue(func() map[string][]string { return parseWordTable("data/actions.txt") })
	thingWords   = sync.OnceValue(func() map[string][]string { return parseWordTable("data/things.txt") })
	conceptWords = sync.OnceValue(func() map[string][]string { return parseWordTable("data/concepts.txt") })
	handSynonyms = sync.OnceValue(func() map[string][]string { return parseWordTable("data/terms.txt") })
)

// parseWordTable parses the word table of the embedded file name; a
// table that does not parse is a fault of the build, and panics.
func parseWordTable(name string) map[string][]string {
	m, err := parseWords(string(mustRead(name)))
	if err != nil {
		panic(fmt.Sprintf("toolsearch: parsing %s: %v", name, err))
	}
	return m
}

// parseWords parses a word table: a line "KEY: VALUE, VALUE, ..." an
// entry (the values in order), blank lines and lines starting with "#"
// left out. A key is written once.
func parseWords(text string) (map[string][]string, error) {
	m := map[string][]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, vals, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf(`line %d: want "KEY: VALUE, VALUE"`, i+1)
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("line %d: %q written twice", i+1, key)
		}
		var list []string
		for v := range strings.SplitSeq(vals, ",") {
			if v = strings.TrimSpace(v); v != "" {
				list = append(list, v)
			}
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("line %d: %q has no values", i+1, key)
		}
		m[key] = list
	}
	return m, nil
}

// mustRead is the embedded file name.
func mustRead(name string) []byte {
	b, err := dataFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("toolsearch: reading %s: %v", name, err))
	}
	return b
}

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
