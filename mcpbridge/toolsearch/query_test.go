package toolsearch

import (
	"slices"
	"strings"
	"testing"
)

func TestQuerySegments(t *testing.T) {
	for _, c := range []struct {
		query  string
		values []string // the stretches that name values, in order
	}{
		{"create a namespace called team-a", []string{"team-a"}},
		{"create a page titled Roadmap 2027", []string{"Roadmap"}},
		{"wait until 'Order confirmed' shows up", []string{"'Order confirmed'"}},
		{`label it "needs review" please`, []string{`"needs review"`}},
		{"why is pod api-7f9 stuck in Pending?", []string{"api-7f9"}},
		{"events of node worker-3, and pod db-0", []string{"worker-3,", "db-0"}},
		// Apostrophes of English are no quotes.
		{"what's in the page's header? I'm not sure", nil},
		// An unclosed quote is text.
		{"find 'unclosed and more", nil},
		// Addresses and paths keep their words; plain numbers are no values.
		{"replays at https://acme.sentry.io/replays/7e07485f and PR #77 of 2024", nil},
		{"", nil},
	} {
		var values []string
		var all strings.Builder
		for _, s := range querySegments(c.query) {
			all.WriteString(s.text)
			if s.value {
				values = append(values, s.text)
			}
		}
		if all.String() != c.query {
			t.Errorf("%q: segments join to %q", c.query, all.String())
		}
		if strings.Join(values, "|") != strings.Join(c.values, "|") {
			t.Errorf("%q: values %q, want %q", c.query, values, c.values)
		}
	}
}

func TestQueryTermsWeights(t *testing.T) {
	terms, weights := queryTerms("create a namespace called team-a for the team", stemWord, nil)
	got := map[string]float64{}
	for i, term := range terms {
		got[term] = weights[i]
	}
	want := map[string]float64{"creat": 1, "namespac": 1, "call": 1, "team": 1, "a": 0}
	for term, w := range want {
		if w == 0 {
			if _, ok := got[term]; ok {
				t.Errorf("stopword %q kept", term)
			}
			continue
		}
		if got[term] != w {
			t.Errorf("%q weighs %v, want %v (all: %v)", term, got[term], w, got)
		}
	}
	// A word seen only in a value weighs valueWeight.
	terms, weights = queryTerms("describe pod api-7f9", stemWord, nil)
	if i := slices.Index(terms, "api"); i < 0 || weights[i] != valueWeight || weights[slices.Index(terms, "pod")] != 1 {
		t.Errorf("describe pod api-7f9: %v %v, want api weighing %v and pod 1", terms, weights, valueWeight)
	}
	// A query that is all values is searched for them.
	terms, weights = queryTerms("'Order confirmed'", stemWord, nil)
	if len(terms) != 2 || weights[0] != 1 || weights[1] != 1 {
		t.Errorf("all values: %v %v, want both words weighing 1", terms, weights)
	}
	// Bounds: a query of many distinct words keeps maxQueryTerms of them.
	var many strings.Builder
	for i := range 26 * 26 {
		many.WriteString("zz" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + " ")
	}
	terms, weights = queryTerms(many.String(), stemWord, nil)
	if len(terms) != maxQueryTerms || len(weights) != maxQueryTerms {
		t.Errorf("%d terms, %d weights, want %d", len(terms), len(weights), maxQueryTerms)
	}
}

func TestPluralWords(t *testing.T) {
	got := pluralWords("show the open issues and pull requests, its status, the analysis, classes of this")
	for _, w := range []string{"issues", "requests", "classes"} {
		if !got[w] {
			t.Errorf("%q not taken as plural: %v", w, got)
		}
	}
	for _, w := range []string{"show", "its", "status", "analysis", "this"} {
		if got[w] {
			t.Errorf("%q taken as plural: %v", w, got)
		}
	}
	if got := pluralWords(strings.Repeat("files ", 1_000_000)); len(got) != 1 {
		t.Errorf("a huge query: %v", got)
	}
}

// TestSearchPlural: a plural noun of the query favours the tool whose
// name holds it (acting on many) over the one whose name holds its
// singular, which the stemmer makes the same word.
func TestSearchPlural(t *testing.T) {
	docs := []Doc{
		{Server: "gh", Tool: "get_issue", Description: "Get details of a specific issue in a repository"},
		{Server: "gh", Tool: "list_issues", Description: "List issues in a repository with filtering options"},
		{Server: "gh", Tool: "create_issue", Description: "Create a new issue in a repository"},
	}
	got := searchTools("show me what is open: the issues of the repo", docs, nil, 0)
	if len(got) == 0 || got[0].Tool != "list_issues" {
		t.Fatalf("%v, want list_issues first", got)
	}
	saved := pluralBonus
	defer func() { pluralBonus = saved }()
	pluralBonus = 0
	if without := searchTools("show me what is open: the issues of the repo", docs, nil, 0); without[0].Score >= got[0].Score {
		t.Errorf("the bonus adds nothing: %d with it, %d without", got[0].Score, without[0].Score)
	}
}

func TestQueryWordsMixedCase(t *testing.T) {
	known := func(w string) bool { return w == "nosql" || w == "hubspot" }
	for query, want := range map[string]string{
		"NoSQL store":        "nosql store",
		"HubSpot's deals":    "hubspot s deals",
		"getIssue of GitHub": "get issue of git hub", // not known: split on case
		"plain words":        "plain words",
	} {
		var got []string
		queryWords(query, func(w string) string { return w }, known, func(w string) { got = append(got, w) })
		if strings.Join(got, " ") != want {
			t.Errorf("%q: %q, want %q", query, got, want)
		}
	}
	var joined []string
	joinedWords("Query a NoSQL store on HubSpot, or getIssue; plain", func(w string) { joined = append(joined, w) })
	if strings.Join(joined, " ") != "nosql hubspot getissue" {
		t.Errorf("joinedWords: %q", joined)
	}
}

// TestSearchMixedCase: a word written in mixed case is found whole, as
// the tools' prose writes it, and not as its parts.
func TestSearchMixedCase(t *testing.T) {
	docs := []Doc{
		{Server: "a", Tool: "run", Description: "Run a SQL statement"},
		{Server: "b", Tool: "run", Description: "Run a statement on a NoSQL store"},
	}
	for _, q := range []string{"a NoSQL statement", "a nosql statement"} {
		if got := searchTools(q, docs, nil, 1); len(got) != 1 || got[0].Server != "b" {
			t.Errorf("%q: %v, want b/run first", q, got)
		}
	}
}

func TestNeighbourPairs(t *testing.T) {
	// Query terms a b c d at positions 1..4 have ids 10, 11, 12, 13.
	qids := make([]uint8, 14)
	qids[10], qids[11], qids[12], qids[13] = 1, 2, 3, 4
	for _, c := range []struct {
		seq  []int32
		want int
	}{
		{[]int32{10, 11}, 1},            // a b
		{[]int32{11, 10}, 1},            // b a: either order
		{[]int32{10, 11, 7, 10, 11}, 1}, // each pair once
		{[]int32{10, 11, 12, 13}, 3},    // a b, b c, c d
		{[]int32{10, 12}, 0},            // a c: not neighbours in the query
		{[]int32{10, -1, 11}, 0},        // a | b: another field
		{[]int32{10, 7, 11}, 0},         // a x b
		{nil, 0},
	} {
		if got := neighbourPairs(c.seq, qids); got != c.want {
			t.Errorf("%v: %d pairs, want %d", c.seq, got, c.want)
		}
	}
}
