package toolsearch

import (
	"math"
	"slices"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/inputschema"
)

// A Doc is one tool as search reads it.
type Doc struct {
	Server      string // the server's name in the configuration
	ServerAlias string // the server's Python identifier
	Tool        string // the tool's name
	Title       string // the tool's title
	Description string // the tool's description
	Keywords    string // the operator's words for the tool (KeywordsFile), separated by spaces
	// Schema is the tool's input schema: a map, json.RawMessage or
	// anything that encodes as JSON. A schema held by reference must not
	// change once searched (the index of its tools is cached).
	Schema any
}

// The fields of a tool a search looks at.
const (
	fieldName      = iota // the tool's name, split on case, "_" and "-"
	fieldTitle            // the tool's title
	fieldServer           // the server's name and Python identifier
	fieldSummary          // the description's first sentence
	fieldDesc             // the rest of the description
	fieldParam            // the input schema's property names
	fieldParamDesc        // the input schema's properties' descriptions
	fieldKeywords         // the words people use for the tool (toolKeywords, Doc.Keywords)
	numFields
)

// A posting is one tool holding a word: how often in each field.
type posting struct {
	doc int32
	tf  [numFields]uint16
}

// index holds what a search needs of a set of tools: their words
// by field, with term and document frequencies.
type index struct {
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

// buildIndex indexes docs.
func buildIndex(docs []Doc, stem bool) *index {
	norm := normalizer(stem)
	ix := &index{
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
		summary, rest := FirstSentence(d.Description)
		addField(fieldSummary, summary)
		addField(fieldDesc, rest)
		for _, p := range schemaProps(d.Schema) {
			addField(fieldParam, p.name)
			addField(fieldParamDesc, p.desc)
		}
		addField(fieldKeywords, keywordsOf(d.Tool, summary))
		addField(fieldKeywords, d.Keywords)
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

// FirstSentence splits a description after its first sentence (or line):
// the sentence, and the rest.
func FirstSentence(s string) (string, string) {
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
	props := schemaProperties(schema)
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

// schemaProperties is the "properties" object of a tool's input schema;
// nil when it has none or is no object.
func schemaProperties(schema any) map[string]any {
	m, _ := inputschema.Object(schema)
	props, _ := m["properties"].(map[string]any)
	return props
}

// maxSeqWords bounds the words of a tool kept in order for proximity.
const maxSeqWords = 512

// wordID is the id of the normalized word s in seq, given to new words
// as they come.
func (ix *index) wordID(s string) int32 {
	id, ok := ix.ids[s]
	if !ok {
		id = int32(len(ix.ids))
		ix.ids[s] = id
	}
	return id
}
