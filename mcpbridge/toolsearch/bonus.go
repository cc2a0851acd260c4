package toolsearch

// The bonuses rank adds beyond BM25F for what a tool's words say in
// their form and order: a plural of the query in the tool's name, and
// neighbouring query words side by side in its text.

import (
	"math"
	"slices"
)

// pluralHits marks the tools whose name holds a plural word of query
// (pluralWords) as written; nil when there is none.
func (ix *index) pluralHits(query string, norm func(string) string) map[int32]bool {
	var hits map[int32]bool
	for w := range pluralWords(query) {
		for _, p := range ix.postings[norm(w)] {
			if p.tf[fieldName] > 0 && slices.Contains(ix.rawNames[p.doc], w) {
				if hits == nil {
					hits = map[int32]bool{}
				}
				hits[p.doc] = true
			}
		}
	}
	return hits
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

// queryPositions gives each word id of the tools its position in terms
// (from 1), 0 for a word that is no term or one that weighs nothing
// (weights[i], a value's); nil when fewer than two terms are words of
// the tools, as a pair needs two.
func (ix *index) queryPositions(terms []string, weights []float64) []uint8 {
	var pos []uint8
	n := 0
	for i, t := range terms {
		if id, ok := ix.ids[t]; ok && i < math.MaxUint8 && weights[i] > 0 {
			if pos == nil {
				pos = make([]uint8, len(ix.ids))
			}
			pos[id] = uint8(i + 1)
			n++
		}
	}
	if n < 2 {
		return nil
	}
	return pos
}

// neighbourPairs counts the pairs of neighbouring query terms (positions
// i and i+1 in pos) that seq holds side by side, in either order, each
// pair once.
func neighbourPairs(seq []int32, pos []uint8) int {
	var seen uint64
	n := 0
	at := func(id int32) int {
		if id < 0 || int(id) >= len(pos) {
			return 0
		}
		return int(pos[id])
	}
	for i := 0; i+1 < len(seq); i++ {
		a, b := at(seq[i]), at(seq[i+1])
		if a == 0 || b == 0 {
			continue
		}
		if a > b {
			a, b = b, a
		}
		if b-a == 1 && a < 64 && seen&(1<<a) == 0 {
			seen |= 1 << a
			n++
		}
	}
	return n
}
