package toolsearch

// The tool-search evaluation (issue 17): the real tools/list answers of
// MCP servers published on npm (testdata/searcheval/servers, recorded by
// testdata/searcheval/record.mjs) and queries phrased the way an agent
// phrases a need (testdata/searcheval/queries.json), each with every tool
// that would answer it. TestSearchEval ranks the tools of all the servers
// at once for every query, as search_tool_docs does, and measures
//
//   - recall@1: the first result is a right answer;
//   - recall@5: a right answer is among the first five;
//   - MRR: the mean of 1/rank of the first right answer in the first five
//     (0 when there is none);
//
// per split ("tune": what a ranker may be tuned on; "heldout": never tuned
// on, it tells whether a change generalizes) and per kind of query.
//
// The goal of the issue is recall@5 ≥ 0.9, recall@1 ≥ 0.7 and MRR ≥ 0.8 on
// both splits. Until the ranker gets there, searchEvalFloors holds today's
// figures rounded down to two decimals, so that the test guards against a
// regression; raise them with the ranker.
//
//	go test -count=1 -run SearchEval -v ./mcpbridge/toolsearch/                              # the table
//	MCP_SEARCHEVAL_MISSES=1 go test -count=1 -run SearchEval -v ./mcpbridge/toolsearch/      # and every miss
//	go test -count=1 -run SearchEval -v ./mcpbridge/toolsearch/ -args -searcheval.misses     # the same
//	go test -run XXX -bench SearchTools ./mcpbridge/toolsearch/                              # time per query, 1,000 and 10,000 tools

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

var searchEvalMisses = flag.Bool("searcheval.misses", false, "log every query of the search evaluation whose first result is not a right answer")

// searchEvalFloors are the least figures each split may measure: today's,
// rounded down to two decimals.
var searchEvalFloors = map[string]searchEvalFigures{
	"tune":    {Recall1: 0.74, Recall5: 0.92, MRR: 0.81},
	"heldout": {Recall1: 0.68, Recall5: 0.92, MRR: 0.78},
}

// searchEvalK is the depth of the evaluation: search_tool_docs' default
// limit (defaultSearchLimit in package mcpbridge).
const searchEvalK = 5

const searchEvalDir = "testdata/searcheval"

// searchEvalServer is one recorded servers/<server>.json.
type searchEvalServer struct {
	Server   string      `json:"server"`
	Package  string      `json:"package"`
	Version  string      `json:"version"`
	Recorded string      `json:"recorded"`
	Tools    []*mcp.Tool `json:"tools"`
}

// searchEvalRef names a tool of a server.
type searchEvalRef struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// searchEvalQuery is one query of queries.json.
type searchEvalQuery struct {
	Q     string          `json:"q"`
	Want  []searchEvalRef `json:"want"`
	Split string          `json:"split"`
	Kind  string          `json:"kind"`
}

type searchEvalFigures struct {
	N                     int
	Recall1, Recall5, MRR float64
}

// searchEvalSplit is the split a query belongs to, fixed by its text
// alone so that nobody chooses it: FNV-1a (32 bits) of "searcheval:" and
// the query, modulo 3; 0 is heldout.
func searchEvalSplit(q string) string {
	h := fnv.New32a()
	h.Write([]byte("searcheval:" + q))
	if h.Sum32()%3 == 0 {
		return "heldout"
	}
	return "tune"
}

var searchEvalKinds = []string{"paraphrase", "task", "own-words"}

// loadSearchEval reads the recorded servers, sorted by name, and the queries.
func loadSearchEval(tb testing.TB) ([]searchEvalServer, []searchEvalQuery) {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(searchEvalDir, "servers", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded servers in %s: %v", searchEvalDir, err)
	}
	var servers []searchEvalServer
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var s searchEvalServer
		if err := json.Unmarshal(raw, &s); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].Server < servers[j].Server })
	raw, err := os.ReadFile(filepath.Join(searchEvalDir, "queries.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var queries []searchEvalQuery
	if err := json.Unmarshal(raw, &queries); err != nil {
		tb.Fatalf("queries.json: %v", err)
	}
	return servers, queries
}

// searchEvalCorpus builds the docs Rank ranks the way the bridge's
// search does: every server's tools in the order of the servers, each
// server with the Python identifier the bridge gives it, and the tools'
// input schemas.
func searchEvalCorpus(servers []searchEvalServer) []Doc {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Server
	}
	al := pyname.Aliases(names, "server")
	var docs []Doc
	for i, s := range servers {
		for _, t := range s.Tools {
			docs = append(docs, Doc{Server: s.Server, ServerAlias: al[i], Tool: t.Name, Title: t.Title, Description: t.Description, Schema: t.InputSchema})
		}
	}
	return docs
}

// TestSearchEvalFixtures checks the evaluation set itself: every right
// answer is a recorded tool, every split follows searchEvalSplit, and the
// set is as large as the issue asks.
func TestSearchEvalFixtures(t *testing.T) {
	servers, queries := loadSearchEval(t)
	tools := map[searchEvalRef]bool{}
	for _, s := range servers {
		if s.Server == "" || s.Package == "" || s.Version == "" || s.Recorded == "" {
			t.Errorf("server %q: server, package, version and recorded are all needed", s.Server)
		}
		for _, tool := range s.Tools {
			ref := searchEvalRef{s.Server, tool.Name}
			if tools[ref] {
				t.Errorf("server %s lists tool %s twice", s.Server, tool.Name)
			}
			tools[ref] = true
		}
	}
	if len(servers) < 15 || len(tools) < 200 {
		t.Errorf("%d servers, %d tools: want at least 15 and 200", len(servers), len(tools))
	}
	if len(queries) < 380 {
		t.Errorf("%d queries: want at least 380", len(queries))
	}
	seen := map[string]bool{}
	for _, q := range queries {
		if strings.TrimSpace(q.Q) == "" || seen[q.Q] {
			t.Errorf("query %q: empty or written twice", q.Q)
		}
		seen[q.Q] = true
		if len(q.Want) == 0 {
			t.Errorf("query %q: no right answer", q.Q)
		}
		for i, w := range q.Want {
			if !tools[w] {
				t.Errorf("query %q: %s/%s is no recorded tool", q.Q, w.Server, w.Tool)
			}
			if slices.Contains(q.Want[:i], w) {
				t.Errorf("query %q: %s/%s marked twice", q.Q, w.Server, w.Tool)
			}
		}
		if want := searchEvalSplit(q.Q); q.Split != want {
			t.Errorf("query %q: split %q, want %q (the split follows from the text; see searchEvalSplit)", q.Q, q.Split, want)
		}
		if !slices.Contains(searchEvalKinds, q.Kind) {
			t.Errorf("query %q: kind %q, want one of %q", q.Q, q.Kind, searchEvalKinds)
		}
	}
}

// searchEvalRank is the rank (1-based) of the first right answer among
// hits of docs, 0 when none is there.
func searchEvalRank(docs []Doc, hits []Hit, want []searchEvalRef) int {
	for i, h := range hits {
		if d := docs[h.Doc]; slices.Contains(want, searchEvalRef{d.Server, d.Tool}) {
			return i + 1
		}
	}
	return 0
}

type searchEvalTally struct {
	n, at1, at5 int
	rr          float64
}

func (t *searchEvalTally) add(rank int) {
	t.n++
	if rank == 1 {
		t.at1++
	}
	if rank >= 1 && rank <= searchEvalK {
		t.at5++
		t.rr += 1 / float64(rank)
	}
}

func (t searchEvalTally) figures() searchEvalFigures {
	if t.n == 0 {
		return searchEvalFigures{}
	}
	n := float64(t.n)
	return searchEvalFigures{N: t.n, Recall1: float64(t.at1) / n, Recall5: float64(t.at5) / n, MRR: t.rr / n}
}

// searchEvalTallies ranks the tools for every query with the signals opt
// leaves on and tallies the ranks by "all", split, split/kind and
// all/kind; each, when not nil, sees every query's results and rank.
func searchEvalTallies(queries []searchEvalQuery, docs []Doc, opt options, each func(q searchEvalQuery, hits []Hit, rank int)) map[string]*searchEvalTally {
	tallies := map[string]*searchEvalTally{}
	for _, q := range queries {
		hits := rankWith(q.Q, docs, searchEvalK, opt)
		rank := searchEvalRank(docs, hits, q.Want)
		for _, key := range []string{"all", q.Split, q.Split + "/" + q.Kind, "all/" + q.Kind} {
			if tallies[key] == nil {
				tallies[key] = &searchEvalTally{}
			}
			tallies[key].add(rank)
		}
		if each != nil {
			each(q, hits, rank)
		}
	}
	return tallies
}

// TestSearchEval measures Rank on the evaluation set and fails when
// a split falls below its floor.
func TestSearchEval(t *testing.T) {
	servers, queries := loadSearchEval(t)
	docs := searchEvalCorpus(servers)
	misses := *searchEvalMisses || os.Getenv("MCP_SEARCHEVAL_MISSES") != ""
	var missLog strings.Builder
	tallies := searchEvalTallies(queries, docs, options{}, func(q searchEvalQuery, hits []Hit, rank int) {
		if !misses || rank == 1 {
			return
		}
		what := "not in the top 5"
		if rank > 1 {
			what = fmt.Sprintf("first right answer at %d", rank)
		}
		fmt.Fprintf(&missLog, "\n[%s/%s] %q: %s\n    want:", q.Split, q.Kind, q.Q, what)
		for _, w := range q.Want {
			fmt.Fprintf(&missLog, " %s/%s", w.Server, w.Tool)
		}
		missLog.WriteString("\n    got: ")
		if len(hits) == 0 {
			missLog.WriteString(" nothing")
		}
		for i, h := range hits {
			d := docs[h.Doc]
			mark := ""
			if slices.Contains(q.Want, searchEvalRef{d.Server, d.Tool}) {
				mark = "*"
			}
			fmt.Fprintf(&missLog, " %d.%s%s/%s(%d)", i+1, mark, d.Server, d.Tool, h.Score)
		}
	})
	tally := func(key string) *searchEvalTally {
		if tallies[key] == nil {
			tallies[key] = &searchEvalTally{}
		}
		return tallies[key]
	}
	var table strings.Builder
	fmt.Fprintf(&table, "search evaluation: %d servers, %d tools, %d queries, k=%d\n", len(servers), len(docs), len(queries), searchEvalK)
	fmt.Fprintf(&table, "%-22s %4s %9s %9s %6s\n", "split/kind", "n", "recall@1", "recall@5", "MRR")
	var rows []string
	for _, split := range []string{"tune", "heldout", "all"} {
		rows = append(rows, split)
		for _, kind := range searchEvalKinds {
			rows = append(rows, split+"/"+kind)
		}
	}
	for _, key := range rows {
		f := tally(key).figures()
		fmt.Fprintf(&table, "%-22s %4d %9.3f %9.3f %6.3f\n", key, f.N, f.Recall1, f.Recall5, f.MRR)
	}
	t.Log("\n" + table.String())
	if misses {
		t.Log("misses (* marks a right answer):" + missLog.String())
	}
	for split, floor := range searchEvalFloors {
		f := tally(split).figures()
		if f.N == 0 {
			t.Errorf("split %s has no query", split)
			continue
		}
		for _, m := range []struct {
			name      string
			got, want float64
		}{
			{"recall@1", f.Recall1, floor.Recall1},
			{"recall@5", f.Recall5, floor.Recall5},
			{"MRR", f.MRR, floor.MRR},
		} {
			if m.got < m.want {
				t.Errorf("%s %s = %.3f, below its floor %.2f", split, m.name, m.got, m.want)
			}
		}
	}
}

// BenchmarkSearchTools times one query (the evaluation's queries in turn)
// over the recorded tools replicated to 1,000 and to 10,000, as if that
// many were configured; the target is at most 5 ms a query over
// 1,000.
func BenchmarkSearchTools(b *testing.B) {
	servers, queries := loadSearchEval(b)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			docs := searchEvalReplicated(b, servers, n)
			Rank(queries[0].Q, docs, searchEvalK) // the index, cached
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Rank(queries[i%len(queries)].Q, docs, searchEvalK)
			}
		})
	}
}

// searchEvalReplicated is the corpus of servers replicated (as servers
// "NAME-2", "NAME-3", …) to want tools.
func searchEvalReplicated(tb testing.TB, servers []searchEvalServer, want int) []Doc {
	var many []searchEvalServer
	count := 0
	for copyN := 1; count < want; copyN++ {
		for _, s := range servers {
			if count == want {
				break
			}
			c := s
			if copyN > 1 {
				c.Server = fmt.Sprintf("%s-%d", s.Server, copyN)
			}
			if count+len(c.Tools) > want {
				c.Tools = c.Tools[:want-count]
			}
			count += len(c.Tools)
			many = append(many, c)
		}
	}
	docs := searchEvalCorpus(many)
	if len(docs) != want {
		tb.Fatalf("%d tools, want %d", len(docs), want)
	}
	return docs
}

// TestSearchAblation measures the evaluation with each signal of the
// ranker turned off in turn (options) and writes the table into
// /tmp/search_ablation.md; it runs when MCP_SEARCHEVAL_ABLATION is set.
//
//	MCP_SEARCHEVAL_ABLATION=1 go test -count=1 -run SearchAblation -v ./mcpbridge/
func TestSearchAblation(t *testing.T) {
	if os.Getenv("MCP_SEARCHEVAL_ABLATION") == "" {
		t.Skip("set MCP_SEARCHEVAL_ABLATION=1 to run the ablation")
	}
	servers, queries := loadSearchEval(t)
	table := searchAblationTable(queries, searchEvalCorpus(servers))
	t.Log("\n" + table)
	if err := os.WriteFile(filepath.Join(os.TempDir(), "search_ablation.md"), []byte(table), 0o644); err != nil {
		t.Error(err)
	}
}

// searchEvalUnseen measures how the ranker does for a server nobody wrote
// tool keywords for: for each server in turn, its tools' keywords are
// hidden (their descriptions start with a zero-width space, which no word
// holds but which the keywords' lookup sees) and the queries whose every right
// answer is one of its tools are ranked; tallied by split as in
// searchEvalTallies. The concept groups stay: they are words' synonyms,
// not a tool's.
func searchEvalUnseen(servers []searchEvalServer, queries []searchEvalQuery) map[string]*searchEvalTally {
	tallies := map[string]*searchEvalTally{}
	for _, hidden := range servers {
		var mine []searchEvalQuery
		for _, q := range queries {
			if !slices.ContainsFunc(q.Want, func(w searchEvalRef) bool { return w.Server != hidden.Server }) {
				mine = append(mine, q)
			}
		}
		if len(mine) == 0 {
			continue
		}
		docs := searchEvalCorpus(servers)
		for i := range docs {
			if docs[i].Server == hidden.Server {
				docs[i].Description = "\u200b" + docs[i].Description
			}
		}
		for key, ty := range searchEvalTallies(mine, docs, options{}, nil) {
			if tallies[key] == nil {
				tallies[key] = &searchEvalTally{}
			}
			tallies[key].n += ty.n
			tallies[key].at1 += ty.at1
			tallies[key].at5 += ty.at5
			tallies[key].rr += ty.rr
		}
	}
	return tallies
}

// TestSearchEvalUnseen logs searchEvalUnseen's figures and fails below
// their floors, today's rounded down.
func TestSearchEvalUnseen(t *testing.T) {
	servers, queries := loadSearchEval(t)
	tallies := searchEvalUnseen(servers, queries)
	var b strings.Builder
	fmt.Fprintf(&b, "each server's tools without their keywords, on the queries answered by that server alone\n%-10s %4s %9s %9s %6s\n", "split", "n", "recall@1", "recall@5", "MRR")
	for _, split := range []string{"tune", "heldout", "all"} {
		f := tallies[split].figures()
		fmt.Fprintf(&b, "%-10s %4d %9.3f %9.3f %6.3f\n", split, f.N, f.Recall1, f.Recall5, f.MRR)
	}
	t.Log("\n" + b.String())
	for split, floor := range searchEvalUnseenFloors {
		if f := tallies[split].figures(); f.Recall5 < floor {
			t.Errorf("%s recall@5 without the server's keywords = %.3f, below its floor %.2f", split, f.Recall5, floor)
		}
	}
}

// searchEvalUnseenFloors are the least recall@5 searchEvalUnseen may
// measure: today's, rounded down to two decimals.
var searchEvalUnseenFloors = map[string]float64{"tune": 0.82, "heldout": 0.80}
