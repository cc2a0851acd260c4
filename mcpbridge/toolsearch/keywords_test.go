package toolsearch

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestToolKeywordData checks the tool keywords' table against the
// evaluation's recorded servers: every entry finds its tool (its name and
// the first sentence of its description), no tool has two entries, and
// its words are single lowercase words, 10 to 40 of them.
func TestToolKeywordData(t *testing.T) {
	servers, _ := loadSearchEval(t)
	recorded := map[[2]string]bool{}
	for _, s := range servers {
		for _, tool := range s.Tools {
			summary, _ := FirstSentence(tool.Description)
			recorded[[2]string{tool.Name, foldSummary(summary)}] = true
		}
	}
	seen := map[[2]string]bool{}
	data := toolKeywordData()
	for _, a := range data {
		key := [2]string{a.tool, foldSummary(a.summary)}
		if !recorded[key] {
			t.Errorf("keywords of %s (%q): no recorded tool has that name and first sentence", a.tool, a.summary)
		}
		if seen[key] {
			t.Errorf("keywords of %s (%q): written twice", a.tool, a.summary)
		}
		seen[key] = true
		words := strings.Fields(a.words)
		for _, w := range words {
			if !isOneWord(w) {
				t.Errorf("keywords of %s: %q is not one lowercase word", a.tool, w)
			}
		}
		if len(words) < 10 || len(words) > 40 {
			t.Errorf("keywords of %s: %d words, want 10 to 40", a.tool, len(words))
		}
	}
	if len(data) < len(recorded)*9/10 {
		t.Errorf("%d tools have keywords of %d recorded", len(data), len(recorded))
	}
}

// isOneWord reports whether w is one word as splitWords splits it, as
// written.
func isOneWord(w string) bool {
	var split []string
	splitWords(w, func(x string) { split = append(split, x) })
	return len(split) == 1 && split[0] == w
}

// recordedWords are the stems (stemWord) of the words (splitWords) of the
// names, titles and descriptions of the evaluation's recorded tools (a
// table's words meet the tools' as stems), and with params those of their
// input schemas' properties' names and descriptions, which a search reads
// too.
func recordedWords(t *testing.T, params bool) map[string]bool {
	servers, _ := loadSearchEval(t)
	words := map[string]bool{}
	add := func(w string) { words[stemWord(w)] = true }
	for _, s := range servers {
		for _, tool := range s.Tools {
			splitWords(tool.Name, add)
			splitWords(tool.Title, add)
			splitWords(tool.Description, add)
			if params {
				for _, p := range schemaProps(tool.InputSchema) {
					splitWords(p.name, add)
					splitWords(p.desc, add)
				}
			}
		}
	}
	return words
}

// TestWordTablesData checks the word tables of data/ against the
// evaluation's recorded tools. A group's key (actions.txt, things.txt,
// concepts.txt) holds the words the tools use, which its words widen to:
// each is a word of some recorded tool's name, title or description (as
// a stem: "observation" is the memory server's "observations"), and
// each of a group's words is one lowercase word. terms.txt is the other
// way round: its keys are the words an agent uses (k8s, repo, xhr, …),
// which the tools often do not, and its values the tools' words, each a
// word of some recorded tool, its schema's included (an entry may hold
// several: "pull request").
func TestWordTablesData(t *testing.T) {
	words, all := recordedWords(t, false), recordedWords(t, true)
	for name, table := range map[string]map[string][]string{"actions.txt": actionWords(), "things.txt": thingWords(), "concepts.txt": conceptWords()} {
		for _, key := range slices.Sorted(maps.Keys(table)) {
			for w := range strings.FieldsSeq(key) {
				if !words[stemWord(w)] {
					t.Errorf("%s: the key %q holds %q, a word of no recorded tool", name, key, w)
				}
			}
			for _, w := range table[key] {
				if !isOneWord(w) {
					t.Errorf("%s: group %q: %q is not one lowercase word", name, key, w)
				}
			}
		}
	}
	var unused []string
	for _, key := range slices.Sorted(maps.Keys(handSynonyms())) {
		if !isOneWord(key) {
			t.Errorf("terms.txt: the key %q is not one lowercase word", key)
		}
		if !all[stemWord(key)] {
			unused = append(unused, key)
		}
		for _, v := range handSynonyms()[key] {
			for w := range strings.FieldsSeq(v) {
				if !all[stemWord(w)] && !termsBeyondRecorded[w] {
					t.Errorf("terms.txt: %q widens to %q, a word of no recorded tool", key, w)
				}
			}
		}
	}
	for w := range termsBeyondRecorded {
		if all[stemWord(w)] {
			t.Errorf("terms.txt: %q is a recorded tool's word now: drop it from termsBeyondRecorded", w)
		}
	}
	t.Logf("terms.txt: %d of %d keys are words of no recorded tool (as an agent's words may be): %s", len(unused), len(handSynonyms()), strings.Join(unused, " "))
}

// termsBeyondRecorded are the words terms.txt widens to that no recorded
// tool uses: "convert" widens to "transform" and "fake" to "mock", words
// of tools beyond the evaluation's servers (a data pipeline's transform,
// a mock server), which the search keeps only where the tools searched
// hold them.
var termsBeyondRecorded = map[string]bool{"transform": true, "mock": true}

// TestParseWords: a word table's lines, comments, and what it refuses.
func TestParseWords(t *testing.T) {
	m, err := parseWords("# a comment\n\ncreate get: new, make ,build\npr: pull request, merge\n")
	if err != nil || !slices.Equal(m["create get"], []string{"new", "make", "build"}) || !slices.Equal(m["pr"], []string{"pull request", "merge"}) || len(m) != 2 {
		t.Fatalf("%q, %v", m, err)
	}
	for _, c := range []struct{ text, want string }{
		{"no colon here", `line 1: want "KEY`},
		{": a, b", `line 1: want "KEY`},
		{"a: b\na: c", `line 2: "a" written twice`},
		{"a: , ,", `line 1: "a" has no values`},
	} {
		if _, err := parseWords(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

func TestKeywordsOf(t *testing.T) {
	a := toolKeywordData()[0]
	if got := keywordsOf(a.tool, a.summary); got != a.words {
		t.Errorf("keywordsOf(%q, %q) = %q, want %q", a.tool, a.summary, got, a.words)
	}
	// Case, spacing and a final full stop are folded.
	folded := "  " + a.summary + " "
	if got := keywordsOf(a.tool, folded); got != a.words {
		t.Errorf("folded summary: %q, want %q", got, a.words)
	}
	// A tool of the same name whose description says something else, or
	// a tool nobody wrote keywords for, has none.
	for _, c := range [][2]string{{a.tool, "Something else entirely."}, {"no_such_tool", a.summary}, {"", ""}} {
		if got := keywordsOf(c[0], c[1]); got != "" {
			t.Errorf("keywordsOf(%q, %q) = %q, want none", c[0], c[1], got)
		}
	}
}
