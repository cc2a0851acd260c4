package toolsearch

import (
	"maps"
	"slices"
	"sync"
)

// A synonymTable holds the synonyms of normalized words: hand holds those
// of handSynonyms and of the groups (groupSynonyms: actionWords and
// thingWords, then conceptWords; weighing handSynonymWeight), at most
// maxSynonyms a word; wordnet holds all of WordNet's (wordnetData; weighing
// wordnetSynonymWeight), in order, but for the word itself, stopwords and
// the word's hand-written synonyms. Of a word's WordNet synonyms a search
// uses only those the tools it searches hold (index.synonyms).
type synonymTable struct {
	hand    map[string][]synonym
	wordnet wordnetTable
}

// synonymTables are the tables of stemmed and of verbatim words, each
// built on the first search that needs it.
var synonymTables struct {
	once [2]sync.Once
	tab  [2]synonymTable
}

const (
	maxSynonyms        = 8 // hand-written synonyms of a word at most
	maxWordNetSynonyms = 5 // WordNet synonyms of a word a search uses, at most
)

// synonymsFor is the synonym table of stemmed words, or of verbatim ones.
func synonymsFor(stem bool) *synonymTable {
	k := 0
	if stem {
		k = 1
	}
	synonymTables.once[k].Do(func() { synonymTables.tab[k] = buildSynonymTable(stem) })
	return &synonymTables.tab[k]
}

// warmOnce starts the stemmed synonym table's build once.
var warmOnce sync.Once

// Warm builds the stemmed synonym table in the background, the
// first time it is called, so that the first search_tool_docs does not
// wait for WordNet's table (about 90 ms on two cores). The bridge calls it
// on its first run_python rather than at start, so that a bridge that
// never runs code never pays for it and its start is not slowed.
func Warm() {
	warmOnce.Do(func() { go synonymsFor(true) })
}

// buildSynonymTable builds the synonym table of stemmed words, or of
// verbatim ones.
func buildSynonymTable(stem bool) synonymTable {
	norm := func(w string) string { return w }
	if stem {
		// Not stemWord: its cache is for the words of queries and tools,
		// and WordNet's would fill it. A stem is kept once, and as the
		// file's own word when it is one.
		stems := make(map[string]string, 1<<16) // by word
		kept := make(map[string]string, 1<<15)  // by itself
		norm = func(w string) string {
			s, ok := stems[w]
			if !ok {
				if s = stemOf(w); s == w {
					s = w
				}
				if k, ok := kept[s]; ok {
					s = k
				} else {
					kept[s] = s
				}
				stems[w] = s
			}
			return s
		}
	}
	hand := map[string][]synonym{}
	add := func(table map[string][]string, concept bool) {
		// In the order of the words, so that which synonyms a word keeps
		// (maxSynonyms) does not depend on the map's order.
		for _, from := range slices.Sorted(maps.Keys(table)) {
			f := norm(from)
			for _, to := range table[from] {
				splitWords(to, func(w string) {
					t := norm(w)
					if t != f && len(hand[f]) < maxSynonyms && !slices.ContainsFunc(hand[f], func(s synonym) bool { return s.term == t }) && !isStopword(t) {
						hand[f] = append(hand[f], synonym{term: t, hand: true, concept: concept})
					}
				})
			}
		}
	}
	add(handSynonyms(), false)
	add(groupSynonyms(actionWords(), thingWords()), false)
	add(groupSynonyms(conceptWords()), true)
	return synonymTable{hand: hand, wordnet: loadWordNet(norm, hand)}
}

// synonyms appends to variants the synonyms of the normalized query word
// t that opt leaves on: its hand-written ones, then the first
// maxWordNetSynonyms of its WordNet ones that ix holds.
func (ix *index) synonyms(variants []synonym, t string, opt options) []synonym {
	if opt.NoSynonyms {
		return variants
	}
	tab := synonymsFor(!opt.NoStem)
	for _, s := range tab.hand[t] {
		if !s.concept || !opt.NoConcepts {
			variants = append(variants, s)
		}
	}
	if opt.NoWordNet {
		return variants
	}
	n := 0
	for _, s := range tab.wordnet.synonyms(t) {
		if n == maxWordNetSynonyms {
			break
		}
		if len(ix.postings[s]) > 0 {
			variants = append(variants, synonym{term: s})
			n++
		}
	}
	return variants
}

// groupSynonyms is groups (each as actionWords) as a table from a word
// to its groups' tool words.
func groupSynonyms(groups ...map[string][]string) map[string][]string {
	m := map[string][]string{}
	for _, g := range groups {
		for _, tools := range slices.Sorted(maps.Keys(g)) {
			for _, w := range g[tools] {
				m[w] = append(m[w], tools)
			}
		}
	}
	return m
}
