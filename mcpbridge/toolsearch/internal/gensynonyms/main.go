// Command gensynonyms writes mcpbridge/toolsearch/data/wordnet.txt: a table
// from an English word an agent may use in a tool search to its synonyms,
// taken from WordNet 3.0 (Debian's wordnet-base: /usr/share/wordnet). The
// table is general: it is not bounded by the words of any set of tools.
// The search keeps, at query time, only the synonyms the tools being
// searched use (mcpbridge/toolsearch/synonyms.go).
//
// It is run by hand, from the repository's root, never by the tests or
// at run time:
//
//	go run ./mcpbridge/toolsearch/internal/gensynonyms
//
// For every single-word lemma of a noun, verb or adjective it takes the
// lemma's most frequent senses (WordNet orders a lemma's senses by their
// tag counts; a sense never seen in the tagged corpus is skipped unless
// it is the first; at most maxSenses), and from them, in that order, the
// other single-word lemmas of the sense's synset (with -hypernyms, then
// those of a verb's hypernym: off, as they proved noise: "walk", "go" and
// "draw" all became "move"); it keeps those whose Snowball stem differs
// from the lemma's own and from those of the targets kept before, at most
// maxTargets of them, and leaves out a lemma with none.
//
// The file holds WordNet's licence notice first, as lines starting with
// "#", then one line a word, sorted: the word and its targets, in order,
// separated by single spaces (about 1.1 MB); mcpbridge/toolsearch/wordnet.go
// embeds it.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kljensen/snowball/english"
)

const (
	// maxTargets bounds a word's targets. The search uses the first five
	// a word has among the words of the tools it searches, so the bound
	// must leave room ahead of those for the targets no tool uses. With
	// the recorded evaluation tools as a stand-in for a user's, a bound
	// of 10 would lose 109 of the 7,001 targets the old, tool-bounded
	// table held (on 87 words: arrest → check, stop; conduct → carry;
	// capture → get), 20 loses 6 on 4 words, and the file grows by only
	// 1.5% from 10 to 20 (47 of its 37,480 words have more than 20; at
	// most 32: "pile").
	maxTargets = 20
	maxSenses  = 3 // senses of a word looked at, at most
)

type synset struct {
	words     []string
	hypernyms []string // offsets of "@" pointers
}

func main() {
	wn := flag.String("wordnet", "/usr/share/wordnet", "WordNet's dict directory")
	out := flag.String("o", "mcpbridge/toolsearch/data/wordnet.txt", "the file to write")
	hypernyms := flag.Bool("hypernyms", false, "add a verb's hypernyms' lemmas after its synonyms")
	flag.Parse()

	table := map[string][]string{}
	var notice []string
	for _, pos := range []string{"noun", "verb", "adj"} {
		synsets, licence := readData(filepath.Join(*wn, "data."+pos))
		if notice == nil {
			notice = licence
		}
		readIndex(filepath.Join(*wn, "index."+pos), func(lemma string, tagged int, offsets []string) {
			if !singleWord(lemma) {
				return
			}
			n := min(len(offsets), maxSenses, max(1, tagged))
			own := english.Stem(lemma, false)
			targets := table[lemma]
			add := func(w string) {
				if len(targets) >= maxTargets || !singleWord(w) {
					return
				}
				s := english.Stem(w, false)
				if s == own {
					return
				}
				for _, t := range targets {
					if english.Stem(t, false) == s {
						return
					}
				}
				targets = append(targets, w)
			}
			for _, off := range offsets[:n] {
				for _, w := range synsets[off].words {
					add(w)
				}
			}
			if *hypernyms && pos == "verb" {
				for _, off := range offsets[:n] {
					if h := synsets[off].hypernyms; len(h) > 0 {
						for _, w := range synsets[h[0]].words {
							add(w)
						}
					}
				}
			}
			if len(targets) > 0 {
				table[lemma] = targets
			}
		})
	}
	if len(notice) == 0 {
		log.Fatal("no licence notice at the head of WordNet's data.noun")
	}
	write(*out, notice, table)
}

// singleWord reports whether w is one lowercase word of letters.
func singleWord(w string) bool {
	if len(w) < 2 {
		return false
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// readData reads a data.<pos> file: synsets by offset, and the licence
// notice that heads it (its lines' text, without their line numbers).
func readData(path string) (map[string]synset, []string) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	m := map[string]synset{}
	var licence []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") { // the licence: "  N text  "
			text := strings.TrimSpace(line)
			if i := strings.IndexByte(text, ' '); i >= 0 {
				text = strings.TrimSpace(text[i+1:])
			} else {
				text = ""
			}
			licence = append(licence, text)
			continue
		}
		if i := strings.Index(line, " | "); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		wcnt, err := strconv.ParseInt(f[3], 16, 32)
		if err != nil {
			continue
		}
		var s synset
		i := 4
		for k := 0; k < int(wcnt) && i+1 < len(f); k++ {
			w := strings.ToLower(f[i])
			if j := strings.IndexByte(w, '('); j >= 0 { // adjective markers: "(a)"
				w = w[:j]
			}
			s.words = append(s.words, w)
			i += 2
		}
		if i < len(f) {
			pcnt, _ := strconv.Atoi(f[i])
			i++
			for k := 0; k < pcnt && i+3 < len(f); k++ {
				if f[i] == "@" {
					s.hypernyms = append(s.hypernyms, f[i+1])
				}
				i += 4
			}
		}
		m[f[0]] = s
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	return m, licence
}

// readIndex calls fn with every lemma of an index.<pos> file, its number
// of tagged senses and its synsets' offsets, most frequent first.
func readIndex(path string, fn func(lemma string, tagged int, offsets []string)) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		synsets, err1 := strconv.Atoi(f[2])
		pcnt, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || len(f) < 6+pcnt+synsets {
			continue
		}
		tagged, _ := strconv.Atoi(f[5+pcnt])
		fn(f[0], tagged, f[6+pcnt:6+pcnt+synsets])
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
}

// write writes the notice and the table to path.
func write(path string, notice []string, table map[string][]string) {
	keys := make([]string, 0, len(table))
	targets := 0
	for k, ts := range table {
		keys = append(keys, k)
		targets += len(ts)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("# WordNet synonyms for the tool search of package toolsearch: a word, then\n")
	b.WriteString("# its synonyms, from its most frequent senses first. Generated from\n")
	b.WriteString("# WordNet 3.0 by go run ./mcpbridge/toolsearch/internal/gensynonyms; DO NOT EDIT.\n")
	b.WriteString("#\n")
	b.WriteString("# WordNet's licence, which asks that this notice accompany all copies:\n")
	b.WriteString("#\n")
	for _, l := range notice {
		if l == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + l + "\n")
	}
	for _, k := range keys {
		b.WriteString(k)
		for _, t := range table[k] {
			b.WriteByte(' ')
			b.WriteString(t)
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d words, %d targets, %d bytes", path, len(keys), targets, b.Len())
}
