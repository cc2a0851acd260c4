package mcpbridge

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// The fields of a tool a search looks at.
const (
	fieldName      = iota // the tool's name, split on case, "_" and "-"
	fieldTitle            // the tool's title
	fieldServer           // the server's name and alias
	fieldSummary          // the description's first sentence
	fieldDesc             // the rest of the description
	fieldParam            // the input schema's property names
	fieldParamDesc        // the input schema's properties' descriptions
	fieldAlias            // the words people use for the tool (toolAliases)
	numFields
)

// Bounds on what one search reads of its query.
const (
	maxQueryRunes = 1000
	maxQueryTerms = 64
	maxNameTerms  = 32 // name words a tool's name coverage counts
)

// searchOptions turn the ranker's signals off one at a time (the
// ablation in search_eval_test.go); the zero value is the ranker.
type searchOptions struct {
	NoStem       bool // words are compared as written (lowercased)
	NoSynonyms   bool // a query word matches only itself
	NoWordNet    bool // only the hand-written synonyms
	NoConcepts   bool // no synonyms from conceptWords
	NoName       bool // the tool's name and title are not searched
	NoServer     bool // the server's name and alias are not searched
	NoLengthNorm bool // a long description weighs as much as a short one
	NoParams     bool // the input schema is not searched
	NoAliases    bool // the words people use for a tool (toolAliases) are not searched
	NoCoverage   bool // no bonus for covering the query or the name, for the verb, a shared plural or neighbouring words side by side
}

// fieldWeight is how much a word weighs in each field; fieldB how much a
// field's length normalizes (BM25's b). These and the weights below were
// tuned on the tune split of the evaluation (search_eval_test.go) only.
var (
	fieldWeight = [numFields]float64{fieldName: 4, fieldTitle: 0.8, fieldServer: 3, fieldSummary: 3, fieldDesc: 0.5, fieldParam: 1.2, fieldParamDesc: 0.2, fieldAlias: 0.8}
	fieldB      = [numFields]float64{fieldName: 0, fieldTitle: 0.3, fieldServer: 0.2, fieldSummary: 0.9, fieldDesc: 0.2, fieldParam: 0.2, fieldParamDesc: 0.9, fieldAlias: 0.5}
)

var (
	bm25K1               = 0.8
	handSynonymWeight    = 0.7  // a hand-written synonym's score, relative to the word itself
	wordnetSynonymWeight = 0.3  // a WordNet synonym's
	coverageBonus        = 0.25 // the score grows by this part for a query fully covered
	nameBonus            = 3.0  // added, times the idf-weighted part of the tool's name the query covers
	questionBonus        = 2.0  // added to a tool that only looks, for a question
	verbBonus            = 1.0  // added when the tool name's verb is a query word (times a synonym's weight)
	pluralBonus          = 3.0  // added when the tool's name holds a plural noun of the query as written
	proximityBonus       = 1.0  // added for each pair of neighbouring query words the tool's text holds side by side
)

// A posting is one tool holding a word: how often in each field.
type posting struct {
	doc int32
	tf  [numFields]uint16
}

// searchIndex holds what a search needs of a set of tools: their words
// by field, with term and document frequencies.
type searchIndex struct {
	n        int
	lens     [][numFields]float32 // words per field, per tool
	avg      [numFields]float64
	postings map[string][]posting
	names    [][]string       // the stems of each tool's name, in order
	rawNames [][]string       // the words of each tool's name as written (lowercased), in order
	seq      [][]int32        // each tool's words (ids) in name, title and description, stopwords left out, -1 between fields
	ids      map[string]int32 // the ids of seq's words
	verbs    []int8           // the position in names of each tool's verb, -1 for none
	readOnly []bool           // the tool's verb only looks (get, list, describe, …)
	stemmed  bool
}

// actionVerbs are the verbs tools name their actions by: a tool's verb
// is the first of its name's words that is one of them (stems too).
var actionVerbs = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`get list create update delete remove add search find read write edit
		start stop kill run execute open close move copy rename upload download fetch scrape crawl extract
		navigate click fill select hover press type drag drop evaluate take send post reply set query
		describe explain apply patch scale rollout push fork merge generate toggle check cancel retrieve
		insert save parse map monitor research inspect interact lookup resolve append install
		sequentialthinking`) {
		actionVerbs[w] = true
		actionVerbs[stemWord(w)] = true
	}
}

// readVerbs are the action verbs of tools that only look: a question
// ("what is…", "which…", "how many…") favours them.
var readVerbs = map[string]bool{}

// questionWords open a question.
var questionWords = map[string]bool{
	"what": true, "whats": true, "which": true, "where": true, "when": true, "who": true, "how": true,
	"is": true, "are": true, "does": true, "do": true, "did": true, "has": true, "have": true, "why": true,
}

func init() {
	for _, w := range strings.Fields("get list read search find describe explain query retrieve check lookup inspect") {
		readVerbs[w] = true
		readVerbs[stemWord(w)] = true
	}
}

// isQuestion reports whether query asks a question: its first word is a
// question word, or it ends with "?".
func isQuestion(query string) bool {
	if strings.HasSuffix(strings.TrimSpace(query), "?") {
		return true
	}
	first := ""
	splitWords(query[:min(len(query), 64)], func(w string) {
		if first == "" {
			first = w
		}
	})
	return questionWords[first]
}

// splitWords splits text into lowercase words, breaking on anything but
// a letter or digit, on "_" and "-", and on camelCase.
func splitWords(text string, fn func(w string)) {
	var buf [64]byte
	cur := buf[:0]
	flush := func() {
		if len(cur) > 0 {
			fn(string(cur))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf:
			switch {
			case 'A' <= r && r <= 'Z':
				if prevLower {
					flush()
				}
				cur = append(cur, byte(r)+'a'-'A')
				prevLower = false
			case 'a' <= r && r <= 'z':
				cur = append(cur, byte(r))
				prevLower = true
			case '0' <= r && r <= '9':
				cur = append(cur, byte(r))
			default:
				flush()
				prevLower = false
			}
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			cur = utf8.AppendRune(cur, unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = utf8.AppendRune(cur, r)
			prevLower = unicode.IsLower(r)
		default:
			flush()
			prevLower = false
		}
		if len(cur) > 64 { // no word is that long: cut it
			flush()
		}
	}
	flush()
}

// stemCache memoizes stemWord; bounded, as queries bring any word.
var stemCache = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

const stemCacheMax = 200_000

// stemWord is the Snowball (Porter2) stem of a lowercase word; a word
// with other than ASCII letters is its own stem.
func stemWord(w string) string {
	stemCache.RLock()
	s, ok := stemCache.m[w]
	stemCache.RUnlock()
	if ok {
		return s
	}
	s = stemOf(w)
	stemCache.Lock()
	if len(stemCache.m) < stemCacheMax {
		stemCache.m[w] = s
	}
	stemCache.Unlock()
	return s
}

// stemOf is stemWord, uncached.
func stemOf(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || 'z' < w[i] {
			return w
		}
	}
	return english.Stem(w, true)
}

// extraStopwords carry no meaning in a search for a tool, beyond
// Snowball's English stopwords.
var extraStopwords = map[string]bool{
	"want": true, "need": true, "please": true, "let": true, "would": true, "could": true,
	"like": true, "via": true, "also": true, "new": true, "whats": true, "im": true,
	"ve": true, "ll": true, "re": true, "d": true, "m": true, "something": true, "thing": true,
	"things": true, "may": true, "might": true, "must": true, "shall": true, "one": true,
	"using": true, "use": true, "tool": true, "tools": true, "able": true, "someone": true,
}

func isStopword(w string) bool { return english.IsStopWord(w) || extraStopwords[w] }

// normalizer maps a word to the form the index holds.
func normalizer(stem bool) func(string) string {
	if stem {
		return stemWord
	}
	return func(w string) string { return w }
}

// buildSearchIndex indexes docs (schemas[i] is docs[i]'s input schema).
func buildSearchIndex(docs []toolDoc, schemas []any, stem bool) *searchIndex {
	norm := normalizer(stem)
	ix := &searchIndex{
		n:        len(docs),
		lens:     make([][numFields]float32, len(docs)),
		postings: make(map[string][]posting, 4096),
		names:    make([][]string, len(docs)),
		rawNames: make([][]string, len(docs)),
		seq:      make([][]int32, len(docs)),
		ids:      make(map[string]int32, 4096),
		verbs:    make([]int8, len(docs)),
		readOnly: make([]bool, len(docs)),
		stemmed:  stem,
	}
	tfs := map[string]*[numFields]uint16{}
	var seq []int32
	var order []string
	for i, d := range docs {
		clear(tfs)
		order = order[:0]
		count := func(f int, w string) string {
			s := norm(w)
			tf := tfs[s]
			if tf == nil {
				tf = new([numFields]uint16)
				tfs[s] = tf
				order = append(order, s)
			}
			if tf[f] < math.MaxUint16 {
				tf[f]++
			}
			return s
		}
		seq = seq[:0]
		addField := func(f int, text string) {
			// The name, title and description are also kept in order,
			// for proximity (neighbourPairs), -1 between them.
			inSeq := f == fieldName || f == fieldTitle || f == fieldSummary || f == fieldDesc
			if inSeq && len(seq) > 0 && seq[len(seq)-1] != -1 {
				seq = append(seq, -1)
			}
			splitWords(text, func(w string) {
				s := count(f, w)
				ix.lens[i][f]++
				if inSeq && len(seq) < maxSeqWords && !isStopword(w) {
					seq = append(seq, ix.wordID(s))
				}
			})
			// Prose names things in mixed case (HubSpot, NoSQL, LinkedIn):
			// the whole is a word too, as a query may write it. A name or
			// a parameter's name is an identifier, whose case splits words.
			if f != fieldName && f != fieldParam {
				joinedWords(text, func(w string) { count(f, w) })
			}
		}
		addField(fieldName, d.Tool)
		splitWords(d.Tool, func(w string) {
			if len(ix.names[i]) < maxNameTerms {
				ix.names[i] = append(ix.names[i], norm(w))
				ix.rawNames[i] = append(ix.rawNames[i], w)
			}
		})
		ix.verbs[i] = -1
		for j, w := range ix.names[i] {
			if actionVerbs[w] || actionVerbs[stemWord(w)] {
				ix.verbs[i] = int8(j)
				ix.readOnly[i] = readVerbs[w]
				break
			}
		}
		addField(fieldTitle, d.Title)
		addField(fieldServer, d.Server)
		if d.ServerAlias != d.Server {
			addField(fieldServer, d.ServerAlias)
		}
		summary, rest := firstSentence(d.Description)
		addField(fieldSummary, summary)
		addField(fieldDesc, rest)
		var sch any
		if i < len(schemas) {
			sch = schemas[i]
		}
		for _, p := range schemaProps(sch) {
			addField(fieldParam, p.name)
			addField(fieldParamDesc, p.desc)
		}
		addField(fieldAlias, aliasWords(d.Tool, summary))
		addField(fieldAlias, d.Aliases)
		ix.seq[i] = slices.Clone(seq)
		for _, s := range order {
			ix.postings[s] = append(ix.postings[s], posting{doc: int32(i), tf: *tfs[s]})
		}
	}
	if ix.n > 0 {
		var sum [numFields]float64
		for _, l := range ix.lens {
			for f := range l {
				sum[f] += float64(l[f])
			}
		}
		for f := range sum {
			ix.avg[f] = max(sum[f]/float64(ix.n), 1)
		}
	}
	return ix
}

// firstSentence splits a description after its first sentence (or line).
func firstSentence(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			return s[:i], s[i+1:]
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				return s[:i+1], s[i+1:]
			}
		}
	}
	return s, ""
}

type schemaProp struct{ name, desc string }

// schemaProps returns the top-level properties of a JSON schema with
// their descriptions.
func schemaProps(schema any) []schemaProp {
	if schema == nil {
		return nil
	}
	m, err := schemaObject(schema)
	if err != nil {
		return nil
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		return nil
	}
	out := make([]schemaProp, 0, len(props))
	for k, v := range props {
		p := schemaProp{name: k}
		if pm, ok := v.(map[string]any); ok {
			p.desc, _ = pm["description"].(string)
		}
		out = append(out, p)
	}
	return out
}

// A synonym is a word a query word widens to, and how much it weighs
// relative to the word itself.
type synonym struct {
	term    string
	hand    bool // from handSynonyms or groupSynonyms, else from WordNet (or the word itself, in rank)
	concept bool // from conceptWords
}

// weight is how much a synonym weighs relative to the word itself.
func (s synonym) weight() float64 {
	if s.hand {
		return handSynonymWeight
	}
	return wordnetSynonymWeight
}

// A synonymTable holds the synonyms of normalized words: hand holds those
// of handSynonyms and of the groups (groupSynonyms: actionWords and
// thingWords, then conceptWords; weighing handSynonymWeight), at most
// maxSynonyms a word; wordnet holds all of WordNet's (wordnetData; weighing
// wordnetSynonymWeight), in order, but for the word itself, stopwords and
// the word's hand-written synonyms. Of a word's WordNet synonyms a search
// uses only those the tools it searches hold (searchIndex.synonyms).
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

// warmSynonymsOnce starts the stemmed synonym table's build once.
var warmSynonymsOnce sync.Once

// warmSynonyms builds the stemmed synonym table in the background, the
// first time it is called, so that the first search_tool_docs does not
// wait for WordNet's table (about 90 ms on two cores). The bridge calls it
// on its first run_python rather than at start, so that a bridge that
// never runs code never pays for it and its start is not slowed.
func warmSynonyms() {
	warmSynonymsOnce.Do(func() { go synonymsFor(true) })
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
	add(handSynonyms, false)
	add(groupSynonyms(actionWords, thingWords), false)
	add(groupSynonyms(conceptWords), true)
	return synonymTable{hand: hand, wordnet: loadWordNet(norm, hand)}
}

// synonyms appends to variants the synonyms of the normalized query word
// t that opt leaves on: its hand-written ones, then the first
// maxWordNetSynonyms of its WordNet ones that ix holds.
func (ix *searchIndex) synonyms(variants []synonym, t string, opt searchOptions) []synonym {
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

// idf is BM25's inverse document frequency of a word in df of n tools.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// rank scores every tool of ix against query; scores[i] is docs[i]'s, 0
// for a tool that matches nothing.
func (ix *searchIndex) rank(query string, opt searchOptions) []float64 {
	norm := normalizer(!opt.NoStem)
	known := func(w string) bool {
		if len(ix.postings[w]) > 0 {
			return true
		}
		if opt.NoSynonyms {
			return false
		}
		tab := synonymsFor(!opt.NoStem)
		return len(tab.hand[w]) > 0 || len(tab.wordnet.synonyms(w)) > 0
	}
	terms, termWeights := queryTerms(query, norm, known)
	if len(terms) == 0 || ix.n == 0 {
		return nil
	}
	var weight [numFields]float64
	for f := range weight {
		weight[f] = fieldWeight[f]
	}
	if opt.NoName {
		weight[fieldName], weight[fieldTitle] = 0, 0
	}
	if opt.NoServer {
		weight[fieldServer] = 0
	}
	if opt.NoParams {
		weight[fieldParam], weight[fieldParamDesc] = 0, 0
	}
	if opt.NoAliases {
		weight[fieldAlias] = 0
	}
	var bFor [numFields]float64
	for f := range bFor {
		if !opt.NoLengthNorm {
			bFor[f] = fieldB[f]
		}
	}
	scores := make([]float64, ix.n)
	matched := make([]uint8, ix.n)
	exact := make([]uint8, ix.n) // query terms a tool holds as themselves
	best := make([]float64, ix.n)
	var touched []int32
	// nameHit[i] marks which words of tool i's name the query holds.
	nameHit := make([]uint32, ix.n)
	verbHit := make([]float64, ix.n)
	var variantsBuf []synonym
	for ti, t := range terms {
		touched = touched[:0]
		variants := ix.synonyms(append(variantsBuf[:0], synonym{term: t}), t, opt)
		variantsBuf = variants
		for k, sv := range variants {
			v := sv.term
			sw := 1.0
			if k > 0 {
				sw = sv.weight()
			}
			ps := ix.postings[v]
			if len(ps) == 0 {
				continue
			}
			w := idf(ix.n, len(ps)) * sw * termWeights[ti]
			for _, p := range ps {
				var tf float64
				for f := range numFields {
					if p.tf[f] == 0 || weight[f] == 0 {
						continue
					}
					norm := 1 - bFor[f] + bFor[f]*float64(ix.lens[p.doc][f])/ix.avg[f]
					tf += weight[f] * float64(p.tf[f]) / norm
				}
				if tf == 0 {
					continue
				}
				s := w * tf * (bm25K1 + 1) / (bm25K1 + tf)
				if s <= 0 {
					continue
				}
				if best[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				if s > best[p.doc] {
					best[p.doc] = s
				}
				if k == 0 && exact[p.doc] < math.MaxUint8 {
					exact[p.doc]++
				}
				if p.tf[fieldName] > 0 && weight[fieldName] > 0 {
					for j, nw := range ix.names[p.doc] {
						if nw == v {
							nameHit[p.doc] |= 1 << j
							if j == int(ix.verbs[p.doc]) {
								verbHit[p.doc] = max(verbHit[p.doc], sw)
							}
						}
					}
				}
			}
		}
		for _, d := range touched {
			scores[d] += best[d]
			matched[d]++
			best[d] = 0
		}
	}
	if opt.NoCoverage {
		return scores
	}
	nq := float64(len(terms))
	question := isQuestion(query)
	plural := ix.pluralHits(query, norm)
	qpos := ix.queryPositions(terms, termWeights)
	for d := range scores {
		if scores[d] == 0 {
			continue
		}
		scores[d] *= 1 + coverageBonus*float64(matched[d])/nq
		if names := ix.names[d]; len(names) > 0 && nameHit[d] != 0 {
			var hit, all float64
			for j, nw := range names {
				w := idf(ix.n, len(ix.postings[nw]))
				all += w
				if nameHit[d]&(1<<j) != 0 {
					hit += w
				}
			}
			if all > 0 {
				scores[d] += nameBonus * hit / all
			}
			scores[d] += verbBonus * verbHit[d]
		}
		if qpos != nil && exact[d] >= 2 {
			scores[d] += proximityBonus * float64(neighbourPairs(ix.seq[d], qpos))
		}
		if plural[int32(d)] {
			scores[d] += pluralBonus
		}
		if question && ix.readOnly[d] {
			scores[d] += questionBonus
		}
	}
	return scores
}
