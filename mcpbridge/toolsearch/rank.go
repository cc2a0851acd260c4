package toolsearch

import "math"

// Bounds on what one search reads of its query.
const (
	maxQueryRunes = 1000
	maxQueryTerms = 64
	maxNameTerms  = 32 // name words a tool's name coverage counts
)

// options turn the ranker's signals off one at a time (the
// ablation in eval_test.go); the zero value is the ranker.
type options struct {
	NoStem       bool // words are compared as written (lowercased)
	NoSynonyms   bool // a query word matches only itself
	NoWordNet    bool // only the hand-written synonyms
	NoConcepts   bool // no synonyms from conceptWords
	NoName       bool // the tool's name and title are not searched
	NoServer     bool // the server's name and Python identifier are not searched
	NoLengthNorm bool // a long description weighs as much as a short one
	NoParams     bool // the input schema is not searched
	NoKeywords   bool // the words people use for a tool (toolKeywords, Doc.Keywords) are not searched
	NoCoverage   bool // no bonus for covering the query or the name, for the verb, a shared plural or neighbouring words side by side
}

// fieldWeight is how much a word weighs in each field; fieldB how much a
// field's length normalizes (BM25's b). These and the weights below were
// tuned on the tune split of the evaluation (eval_test.go) only.
var (
	fieldWeight = [numFields]float64{fieldName: 4, fieldTitle: 0.8, fieldServer: 3, fieldSummary: 3, fieldDesc: 0.5, fieldParam: 1.2, fieldParamDesc: 0.2, fieldKeywords: 0.8}
	fieldB      = [numFields]float64{fieldName: 0, fieldTitle: 0.3, fieldServer: 0.2, fieldSummary: 0.9, fieldDesc: 0.2, fieldParam: 0.2, fieldParamDesc: 0.9, fieldKeywords: 0.5}
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
