// Package toolsearch ranks the tools of MCP servers against a query in
// an agent's own words, for search_tool_docs: BM25F over the tools'
// fields (name, title, server, description, parameters, keywords; see
// index.go), with Snowball stems, synonyms (hand-written tables and
// WordNet's, in data/) and bonuses for covering the query and the tool's
// name. Gathering the tools, and what a search returns, are the bridge's.
package toolsearch

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// A Hit is one tool a search found: its index in the docs searched, and
// its relevance, positive, higher for a better match.
type Hit struct {
	Doc   int
	Score int
}

// Rank ranks docs by relevance to query, best first, at most limit (0:
// all); docs that match no word of the query are left out, and nil is
// returned when none matches. Searching the same docs again reuses their
// index.
func Rank(query string, docs []Doc, limit int) []Hit {
	return rankWith(query, docs, limit, options{})
}

// rankWith is Rank with some of its signals turned off.
func rankWith(query string, docs []Doc, limit int, opt options) []Hit {
	ix := cachedIndex(docs, !opt.NoStem)
	scores := ix.rank(query, opt)
	if scores == nil {
		return nil
	}
	var hits []int
	for i, s := range scores {
		if s > 0 {
			hits = append(hits, i)
		}
	}
	less := func(a, b int) int {
		switch {
		case scores[a] != scores[b]:
			return cmp.Compare(scores[b], scores[a])
		case docs[a].Server != docs[b].Server:
			return strings.Compare(docs[a].Server, docs[b].Server)
		default:
			return strings.Compare(docs[a].Tool, docs[b].Tool)
		}
	}
	if limit > 0 && len(hits) > limit {
		// Keep the best limit without sorting them all.
		top := make([]int, 0, limit+1)
		for _, h := range hits {
			if len(top) == limit && less(h, top[limit-1]) >= 0 {
				continue
			}
			k, _ := slices.BinarySearchFunc(top, h, less)
			top = slices.Insert(top, k, h)
			if len(top) > limit {
				top = top[:limit]
			}
		}
		hits = top
	} else {
		slices.SortStableFunc(hits, less)
	}
	if len(hits) == 0 {
		return nil
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{Doc: h, Score: max(1, int(math.Round(scores[h]*1000)))}
	}
	return out
}

// idf is BM25's inverse document frequency of a word in df of n tools.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// rank scores every tool of ix against query; scores[i] is docs[i]'s, 0
// for a tool that matches nothing.
func (ix *index) rank(query string, opt options) []float64 {
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
	if opt.NoKeywords {
		weight[fieldKeywords] = 0
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

// The bonuses rank adds beyond BM25F for what a tool's words say in
// their form and order: a plural of the query in the tool's name, and
// neighbouring query words side by side in its text.

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
