package toolsearch

import (
	_ "embed"
	"slices"
	"strings"
)

// wordnetData is WordNet's synonyms of English words (data/wordnet.txt,
// written by go run ./mcpbridge/toolsearch/internal/gensynonyms from
// WordNet 3.0): a
// line a word, sorted, the word then its synonyms, from its most frequent
// senses first, separated by single spaces; lines starting with "#" (the
// head of the file: WordNet's licence notice, which must go with every
// copy of the table) are comments. The table is general, not bounded by
// the words of any tools: a search keeps, of a word's synonyms, those the
// tools it searches use (index.synonyms).
//
//go:embed data/wordnet.txt
var wordnetData string

// eachWordNetSynonyms calls fn with every word of wordnetData and its
// synonyms, in the order of the file. The strings are wordnetData's own;
// targets is reused from one call to the next.
func eachWordNetSynonyms(fn func(word string, targets []string)) {
	var targets []string
	for rest := wordnetData; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		targets = targets[:0]
		word := ""
		for f := range strings.SplitSeq(line, " ") {
			switch {
			case f == "":
			case word == "":
				word = f
			default:
				targets = append(targets, f)
			}
		}
		if len(targets) > 0 {
			fn(word, targets)
		}
	}
}

// A wordnetTable is WordNet's synonyms by normalized word, compact: the
// words sorted, and the synonyms of words[i] are
// targets[ends[i-1]:ends[i]] (from 0 for the first), in order.
type wordnetTable struct {
	words   []string
	ends    []int32
	targets []string
}

// loadWordNet reads wordnetData into a table of the words norm gives.
// The words of the file with one normalized form pool their synonyms, in
// the order of the file; a word's synonyms leave out the word itself,
// stopwords, and its synonyms in hand.
func loadWordNet(norm func(string) string, hand map[string][]synonym) wordnetTable {
	byWord := make(map[string][]string, 1<<15)
	total := 0
	eachWordNetSynonyms(func(word string, targets []string) {
		f := norm(word)
		ts, h := byWord[f], hand[f]
		n := len(ts)
		for _, to := range targets {
			t := norm(to)
			if t != f && !slices.Contains(ts, t) && !isStopword(t) &&
				!slices.ContainsFunc(h, func(s synonym) bool { return s.term == t }) {
				ts = append(ts, t)
			}
		}
		if len(ts) > n {
			byWord[f] = ts
			total += len(ts) - n
		}
	})
	tab := wordnetTable{
		words:   make([]string, 0, len(byWord)),
		ends:    make([]int32, 0, len(byWord)),
		targets: make([]string, 0, total),
	}
	for w := range byWord {
		tab.words = append(tab.words, w)
	}
	slices.Sort(tab.words)
	for _, w := range tab.words {
		tab.targets = append(tab.targets, byWord[w]...)
		tab.ends = append(tab.ends, int32(len(tab.targets)))
	}
	return tab
}

// synonyms are word's synonyms, in order; nil for a word the table lacks.
func (tab *wordnetTable) synonyms(word string) []string {
	i, ok := slices.BinarySearch(tab.words, word)
	if !ok {
		return nil
	}
	start := int32(0)
	if i > 0 {
		start = tab.ends[i-1]
	}
	return tab.targets[start:tab.ends[i]:tab.ends[i]]
}
