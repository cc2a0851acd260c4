package toolsearch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestWordNetData checks the embedded table: WordNet's licence notice
// heads it, and every other line is a word, sorted, then its synonyms,
// all single lowercase words.
func TestWordNetData(t *testing.T) {
	for _, want := range []string{"WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.", "THIS SOFTWARE AND DATABASE IS PROVIDED \"AS IS\""} {
		if !strings.Contains(wordnetData[:min(len(wordnetData), 4096)], want) {
			t.Errorf("the head of data/wordnet.txt lacks WordNet's notice %q", want)
		}
	}
	isWord := func(w string) bool {
		if len(w) < 2 {
			return false
		}
		for i := 0; i < len(w); i++ {
			if w[i] < 'a' || 'z' < w[i] {
				return false
			}
		}
		return true
	}
	words, targets, prev := 0, 0, ""
	eachWordNetSynonyms(func(word string, ts []string) {
		words++
		targets += len(ts)
		if word <= prev {
			t.Errorf("%q after %q: the words are not sorted, or written twice", word, prev)
		}
		prev = word
		for _, w := range append([]string{word}, ts...) {
			if !isWord(w) {
				t.Errorf("line %q: %q is not one lowercase word", word, w)
			}
		}
	})
	if words < 30000 || targets < 80000 {
		t.Errorf("%d words, %d targets: the table is not WordNet's, or was cut", words, targets)
	}
	t.Logf("data/wordnet.txt: %d bytes, %d words, %d targets", len(wordnetData), words, targets)
}

// TestWordNetGeneral: the table holds general English, words none of the
// evaluation's tools use (nor the synonyms tested), so that it serves
// tools other than those; over the evaluation's tools such a word widens
// only to words they use.
func TestWordNetGeneral(t *testing.T) {
	servers, _ := loadSearchEval(t)
	ix := buildIndex(searchEvalCorpus(servers), true)
	tab := synonymsFor(true)
	for _, c := range [][2]string{{"physician", "doctor"}, {"lawyer", "attorney"}, {"sofa", "couch"}, {"automobile", "car"}, {"wedding", "marriage"}} {
		from, to := stemWord(c[0]), stemWord(c[1])
		if !slices.Contains(tab.wordnet.synonyms(from), to) {
			t.Errorf("%q does not widen to %q in WordNet's table: %q", c[0], c[1], tab.wordnet.synonyms(from))
		}
		if len(ix.postings[from]) > 0 || len(ix.postings[to]) > 0 {
			t.Errorf("an evaluation tool uses %q or %q: pick another pair", c[0], c[1])
		}
		for _, s := range ix.synonyms(nil, from, options{}) {
			if s.term == to || len(ix.postings[s.term]) == 0 {
				t.Errorf("%q widens to %q over the evaluation's tools, which do not use it", c[0], s.term)
			}
		}
	}
	// How much of the table the evaluation's tools reach at all.
	words, reached := 0, 0
	for _, w := range tab.wordnet.words {
		words++
		if ts := tab.wordnet.synonyms(w); slices.ContainsFunc(ts, func(s string) bool { return len(ix.postings[s]) > 0 }) {
			reached++
		}
	}
	t.Logf("WordNet's table: %d stems; %d of them widen to a word of the evaluation's %d tools", words, reached, ix.n)
}

// TestWordNetFilter: of a word's WordNet synonyms a search uses only
// those the tools it searches hold, the first maxWordNetSynonyms of them
// in the table's order, after the word's hand-written synonyms; stemmed
// or verbatim, and not at all with NoWordNet or NoSynonyms.
func TestWordNetFilter(t *testing.T) {
	var raw []string // "pile"'s synonyms as the file writes them
	eachWordNetSynonyms(func(word string, ts []string) {
		if word == "pile" {
			raw = slices.Clone(ts)
		}
	})
	if len(raw) < maxWordNetSynonyms+4 || maxWordNetSynonyms != 5 {
		t.Fatalf("pile: %q: too few synonyms for the test", raw)
	}
	// Tools using every synonym of "pile" but its first and third, and a
	// word no table knows. (The test is written for maxWordNetSynonyms 5.)
	var docs []Doc
	for i, w := range raw {
		if i == 0 || i == 2 {
			continue
		}
		docs = append(docs, Doc{Server: "s", ServerAlias: "s", Tool: fmt.Sprintf("tool%d", i), Description: "Keeps a " + w + " of zyxwv."})
	}
	for _, stem := range []bool{true, false} {
		norm := normalizer(stem)
		ix := buildIndex(docs, stem)
		opt := options{NoStem: !stem}
		tab := synonymsFor(stem)
		word := norm("pile")
		if len(tab.hand[word]) != 0 || !slices.Equal(tab.wordnet.synonyms(word)[:len(raw)], mapWords(raw, norm)) {
			t.Fatalf("stem=%v: pile's synonyms are %v and %q, not the file's %q first", stem, tab.hand[word], tab.wordnet.synonyms(word), raw)
		}
		// The first five the tools use, though they use more.
		var want []synonym
		for _, w := range []string{raw[1], raw[3], raw[4], raw[5], raw[6]} {
			want = append(want, synonym{term: norm(w)})
		}
		if got := ix.synonyms(nil, word, opt); !slices.Equal(got, want) {
			t.Errorf("stem=%v: pile widens to %v, want %v", stem, got, want)
		}
		if got := ix.synonyms(nil, norm("zyxwv"), opt); len(got) != 0 {
			t.Errorf("stem=%v: a word of no table widens to %v", stem, got)
		}
		opt.NoWordNet = true
		if got := ix.synonyms(nil, word, opt); len(got) != 0 {
			t.Errorf("stem=%v, NoWordNet: pile widens to %v", stem, got)
		}
		opt.NoWordNet, opt.NoSynonyms = false, true
		if got := ix.synonyms(nil, word, opt); len(got) != 0 {
			t.Errorf("stem=%v, NoSynonyms: pile widens to %v", stem, got)
		}
	}

	// A word with hand-written synonyms keeps them all, first, and at most
	// maxWordNetSynonyms of WordNet's after them.
	tab := synonymsFor(true)
	word := stemWord("set")
	hand, wn := tab.hand[word], tab.wordnet.synonyms(word)
	if len(hand) == 0 || len(wn) <= maxWordNetSynonyms {
		t.Fatalf("set: hand %v, WordNet %q: pick another word", hand, wn)
	}
	var terms []string
	for _, h := range hand {
		terms = append(terms, h.term)
	}
	docs = docs[:0]
	for i, s := range append(terms, wn...) {
		docs = append(docs, Doc{Server: "s", ServerAlias: "s", Tool: fmt.Sprintf("tool%d", i), Description: s})
	}
	ix := buildIndex(docs, false) // the stems as written
	got := ix.synonyms(nil, word, options{})
	want := append(slices.Clone(hand), synonym{term: wn[0]}, synonym{term: wn[1]}, synonym{term: wn[2]}, synonym{term: wn[3]}, synonym{term: wn[4]})
	if !slices.Equal(got, want) {
		t.Errorf("set widens to %v, want %v", got, want)
	}
	for _, s := range wn {
		if slices.ContainsFunc(hand, func(h synonym) bool { return h.term == s }) {
			t.Errorf("set: %q is both a hand-written and a WordNet synonym", s)
		}
	}
}

// mapWords is fn of every word of words.
func mapWords(words []string, fn func(string) string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = fn(w)
	}
	return out
}

// BenchmarkWordNetLoad times building the synonym tables from the
// embedded WordNet file, as the first search does, and what it allocates
// (TestWordNetData logs the table's size).
func BenchmarkWordNetLoad(b *testing.B) {
	for _, stem := range []bool{true, false} {
		b.Run(fmt.Sprintf("stem=%v", stem), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buildSynonymTable(stem)
			}
		})
	}
}
