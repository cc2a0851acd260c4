// Command gensynonyms writes mcpbridge/synonyms_wordnet.go: a table from
// a word an agent may use in a tool search to the words MCP tools use for
// the same thing, taken from WordNet (Debian's wordnet-base:
// /usr/share/wordnet) and bounded by the tool vocabulary, i.e. every word
// in the names and descriptions of the tools recorded in
// mcpbridge/testdata/searcheval/servers/*.json (the tools only; never the
// evaluation's queries).
//
// It is run by hand, from the repository's root, never by the tests or
// at run time:
//
//	go run ./mcpbridge/internal/gensynonyms
//
// For every single-word lemma of a noun, verb or adjective it takes the
// lemma's most frequent senses (WordNet orders a lemma's senses by their
// tag counts; a sense never seen in the tagged corpus is skipped unless
// it is the first; at most maxSenses), and from them, in that order, the
// other single-word lemmas of the sense's synset (with -hypernyms, then
// those of a verb's hypernym: off, as they proved noise: "walk", "go" and
// "draw" all became "move"); it keeps those whose Snowball stem is a stem
// of the tool vocabulary and differs from the lemma's own, at most
// maxTargets of them. With -known=false it maps only the words the tools
// do not use themselves.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
)

const (
	maxTargets = 5 // targets of a word at most
	maxSenses  = 3 // senses of a word looked at, at most
)

type synset struct {
	words     []string
	hypernyms []string // offsets of "@" pointers
}

func main() {
	wn := flag.String("wordnet", "/usr/share/wordnet", "WordNet's dict directory")
	servers := flag.String("servers", "mcpbridge/testdata/searcheval/servers", "recorded tools/list answers")
	out := flag.String("o", "mcpbridge/synonyms_wordnet.go", "the Go file to write")
	known := flag.Bool("known", true, "map the words of the tool vocabulary too, not only the words tools do not use")
	hypernyms := flag.Bool("hypernyms", false, "add a verb's hypernyms' lemmas after its synonyms")
	flag.Parse()

	vocab := toolVocabulary(*servers)
	table := map[string][]string{}
	for _, pos := range []string{"noun", "verb", "adj"} {
		synsets := readData(filepath.Join(*wn, "data."+pos))
		readIndex(filepath.Join(*wn, "index."+pos), func(lemma string, tagged int, offsets []string) {
			if !singleWord(lemma) {
				return
			}
			n := min(len(offsets), maxSenses, max(1, tagged))
			own := english.Stem(lemma, false)
			if !*known && vocab[own] {
				return
			}
			targets := table[lemma]
			add := func(w string) {
				s := english.Stem(w, false)
				if len(targets) >= maxTargets || s == own || !vocab[s] || !singleWord(w) {
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
	write(*out, table)
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

// toolVocabulary is the set of stems of the words in the recorded tools'
// names and descriptions.
func toolVocabulary(dir string) map[string]bool {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no recorded servers in %s", dir)
	}
	vocab := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		var s struct {
			Tools []struct {
				Name        string `json:"name"`
				Title       string `json:"title"`
				Description string `json:"description"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			log.Fatalf("%s: %v", f, err)
		}
		for _, t := range s.Tools {
			for _, w := range split(t.Name + " " + t.Title + " " + t.Description) {
				vocab[english.Stem(w, false)] = true
			}
		}
	}
	return vocab
}

// split breaks text into lowercase words on anything but a letter,
// and on camelCase.
func split(text string) []string {
	var out []string
	var cur []rune
	prevLower := false
	for _, r := range text {
		switch {
		case unicode.IsUpper(r):
			if prevLower && len(cur) > 0 {
				out = append(out, string(cur))
				cur = cur[:0]
			}
			cur = append(cur, unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r):
			cur = append(cur, r)
			prevLower = true
		default:
			if len(cur) > 0 {
				out = append(out, string(cur))
				cur = cur[:0]
			}
			prevLower = false
		}
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}

// readData reads a data.<pos> file: synsets by offset.
func readData(path string) map[string]synset {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	m := map[string]synset{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue // the licence
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
	return m
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

func write(path string, table map[string][]string) {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("// Code generated by go run ./mcpbridge/internal/gensynonyms; DO NOT EDIT.\n\n")
	b.WriteString("package mcpbridge\n\n")
	b.WriteString("// wordnetSynonyms maps a word an agent may use to at most five words of\n")
	b.WriteString("// the recorded tools' vocabulary that WordNet gives as its synonyms (or,\n")
	b.WriteString("// for a verb, its hypernym's), from its most frequent senses first.\n")
	b.WriteString("var wordnetSynonyms = map[string][]string{\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%q: {", k)
		for i, t := range table[k] {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", t)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d words", path, len(keys))
}
