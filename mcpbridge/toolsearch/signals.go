package toolsearch

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
