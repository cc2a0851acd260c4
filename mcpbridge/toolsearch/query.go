package toolsearch

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what one search reads of its query.
const (
	maxQueryRunes = 1000
	maxQueryTerms = 64
	maxNameTerms  = 32 // name words a tool's name coverage counts
)

// valueWeight is how much a word of a value in the query weighs, relative
// to the query's other words (tuned on the tune split of the evaluation:
// nothing): an agent names the things it acts on ("create a namespace
// called team-a", "why is pod api-7f9 pending", "wait for 'Order
// confirmed'"), and their words say little about which tool acts. A query
// that is all values is searched for them.
var valueWeight = 0.0

// queryTerms are the distinct normalized words of a query, stopwords
// left out, bounded, each with its weight: 1, or valueWeight for a word
// only ever seen inside a value (1 all the same when every word is).
func queryTerms(query string, norm func(string) string, known func(string) bool) ([]string, []float64) {
	n := 0
	for i := range query {
		if n == maxQueryRunes {
			query = query[:i]
			break
		}
		n++
	}
	var terms []string
	var weights []float64
	at := map[string]int{}
	for _, seg := range querySegments(query) {
		w := 1.0
		if seg.value {
			w = valueWeight
		}
		queryWords(seg.text, norm, known, func(word string) {
			if isStopword(word) {
				return
			}
			s := norm(word)
			if i, ok := at[s]; ok {
				weights[i] = max(weights[i], w)
				return
			}
			if len(terms) >= maxQueryTerms {
				return
			}
			at[s] = len(terms)
			terms = append(terms, s)
			weights = append(weights, w)
		})
	}
	// A query that is all values ("'Order confirmed'") is searched for
	// them: nothing else says what it wants.
	if !slices.ContainsFunc(weights, func(w float64) bool { return w == 1 }) {
		for i := range weights {
			weights[i] = 1
		}
	}
	return terms, weights
}

// A querySegment is a stretch of a query, and whether it names a value.
type querySegment struct {
	text  string
	value bool
}

// valueIntroducers are the words after which an agent names a thing.
var valueIntroducers = map[string]bool{"called": true, "named": true, "titled": true, "entitled": true}

// querySegments cuts query into the stretches that name values (a string
// in quotes, the token after "called" or "named", an identifier) and
// those between them, in order.
func querySegments(query string) []querySegment {
	var segs []querySegment
	plain := 0 // start of the current plain stretch
	emit := func(from, to int, value bool) {
		if plain < from {
			segs = append(segs, querySegment{query[plain:from], false})
		}
		if from < to {
			segs = append(segs, querySegment{query[from:to], value})
		}
		plain = to
	}
	prevWord := ""
	for i := 0; i < len(query); {
		r, size := utf8.DecodeRuneInString(query[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		// A token runs to the next space.
		end := i
		for end < len(query) {
			r2, s2 := utf8.DecodeRuneInString(query[end:])
			if unicode.IsSpace(r2) {
				break
			}
			end += s2
		}
		tok := query[i:end]
		if q := tok[0]; (q == '\'' || q == '"' || q == '`') && (i == 0 || !isWordByte(query[i-1])) {
			if close := quoteEnd(query, i+1, q); close > 0 {
				emit(i, close+1, true)
				i = close + 1
				prevWord = ""
				continue
			}
		}
		word := strings.ToLower(strings.Trim(tok, ".,;:!?()[]{}"))
		if valueIntroducers[prevWord] || isIdentifier(tok) {
			emit(i, end, true)
		}
		prevWord = word
		i = end
	}
	emit(len(query), len(query), false)
	return segs
}

// quoteEnd is the index of the quote q closing a string opened before
// from: one followed by the end, a space or punctuation, within 200
// bytes; -1 when there is none.
func quoteEnd(query string, from int, q byte) int {
	for j := from; j < len(query) && j < from+200; j++ {
		if query[j] == q && j > from && (j+1 == len(query) || !isWordByte(query[j+1])) {
			return j
		}
	}
	return -1
}

func isWordByte(b byte) bool {
	return b >= 0x80 || b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// isIdentifier reports whether tok, a token of a query, names a thing
// by an identifier: it mixes letters and digits (worker-3, api-7f9) and
// is no address or path, whose words (a host's, a route's) often name
// the service or what it holds.
func isIdentifier(tok string) bool {
	if strings.ContainsRune(tok, '/') {
		return false
	}
	var letter, digit bool
	for _, r := range tok {
		switch {
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsLetter(r):
			letter = true
		}
	}
	return letter && digit
}

// pluralWords are the words of query that look plural as written (more
// than three letters, ending in "s" but not "ss", "us" or "is"), not
// stopwords, bounded as queryTerms bounds a query. A tool whose name holds
// one as written (list_issues, search_issues for "the open issues") acts
// on many, as the query asks, where the stemmer folds it with the
// singular of a tool acting on one (get_issue).
func pluralWords(query string) map[string]bool {
	if len(query) > 4*maxQueryRunes {
		query = query[:4*maxQueryRunes]
	}
	var plurals map[string]bool
	splitWords(query, func(w string) {
		if len(plurals) >= maxQueryTerms || len(w) <= 3 || !strings.HasSuffix(w, "s") || isStopword(w) {
			return
		}
		for _, not := range []string{"ss", "us", "is"} {
			if strings.HasSuffix(w, not) {
				return
			}
		}
		if plurals == nil {
			plurals = map[string]bool{}
		}
		plurals[w] = true
	})
	return plurals
}

// isCamelRun reports whether run, letters and digits, changes from a
// lowercase letter to an uppercase one (splitWords splits it there).
func isCamelRun(run string) bool {
	prevLower := false
	for _, r := range run {
		if unicode.IsUpper(r) && prevLower {
			return true
		}
		prevLower = unicode.IsLower(r)
	}
	return false
}

// eachRun calls fn with every maximal run of letters and digits of text.
func eachRun(text string, fn func(run string)) {
	start := -1
	for i, r := range text {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			fn(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		fn(text[start:])
	}
}

// joinedWords calls fn with the lowercase whole of every run of text
// that splitWords splits on its case (HubSpot, NoSQL, GitHub), no longer
// than a word may be.
func joinedWords(text string, fn func(w string)) {
	if !mayHaveCamel(text) {
		return
	}
	eachRun(text, func(run string) {
		if len(run) <= 64 && isCamelRun(run) {
			fn(strings.ToLower(run))
		}
	})
}

// mayHaveCamel reports whether text may hold a lowercase letter followed
// by an uppercase one: false only when its bytes are ASCII and it holds
// none, so that most prose is not looked at twice.
func mayHaveCamel(text string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' && i > 0 && 'a' <= text[i-1] && text[i-1] <= 'z' {
			return true
		}
	}
	return false
}

// queryWords splits a query's text into words as splitWords does, but
// keeps whole a run written in mixed case (NoSQL, HubSpot, LinkedIn) whose
// normalized whole is a word known (to the tools or the synonyms).
func queryWords(text string, norm func(string) string, known func(string) bool, fn func(w string)) {
	if known == nil {
		splitWords(text, fn)
		return
	}
	eachRun(text, func(run string) {
		if len(run) <= 64 && isCamelRun(run) {
			if w := strings.ToLower(run); known(norm(w)) {
				fn(w)
				return
			}
		}
		splitWords(run, fn)
	})
}
