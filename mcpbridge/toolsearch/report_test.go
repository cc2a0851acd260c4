package toolsearch

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// searchAblations are the ranker's signals turned off one at a time, for
// the ablation table.
var searchAblations = []struct {
	name string
	opt  options
}{
	{"all signals", options{}},
	{"no stemming", options{NoStem: true}},
	{"no synonyms", options{NoSynonyms: true}},
	{"no WordNet synonyms", options{NoWordNet: true}},
	{"no concept groups", options{NoConcepts: true}},
	{"no name/title field", options{NoName: true}},
	{"no server field", options{NoServer: true}},
	{"no length normalisation", options{NoLengthNorm: true}},
	{"no parameter fields", options{NoParams: true}},
	{"no tool keywords", options{NoKeywords: true}},
	{"no coverage, name or verb bonuses", options{NoCoverage: true}},
}

// searchAblationTable is the evaluation with each of searchAblations in
// turn, as a markdown table.
func searchAblationTable(queries []searchEvalQuery, docs []Doc) string {
	var b strings.Builder
	b.WriteString("| ranker | tune recall@1 | tune recall@5 | tune MRR | heldout recall@1 | heldout recall@5 | heldout MRR |\n|---|---|---|---|---|---|---|\n")
	for _, v := range searchAblations {
		tl := searchEvalTallies(queries, docs, v.opt, nil)
		tu, ho := tl["tune"].figures(), tl["heldout"].figures()
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", v.name, tu.Recall1, tu.Recall5, tu.MRR, ho.Recall1, ho.Recall5, ho.MRR)
	}
	return b.String()
}

// TestSearchReport writes the tool-search section of BENCHMARKS.md (the
// evaluation by split and kind, the ablation, and times at 1,000 and
// 10,000 tools) to the file MCP_SEARCHEVAL_REPORT names; scripts/bench
// runs it and hands the file to the integration report.
//
//	MCP_SEARCHEVAL_REPORT=/tmp/search.md go test -count=1 -run SearchReport ./mcpbridge/toolsearch/
func TestSearchReport(t *testing.T) {
	path := os.Getenv("MCP_SEARCHEVAL_REPORT")
	if path == "" {
		t.Skip("set MCP_SEARCHEVAL_REPORT=FILE to write the search section of the benchmark report")
	}
	servers, queries := loadSearchEval(t)
	docs := searchEvalCorpus(servers)
	var b strings.Builder
	fmt.Fprintf(&b, "## 13. Tool search: `runtime.search_tool_docs` on the evaluation set\n\n")
	fmt.Fprintf(&b, "The evaluation of `mcpbridge/toolsearch/testdata/searcheval` ([mcpbridge/toolsearch/EVAL.md](mcpbridge/toolsearch/EVAL.md)): %d real tools of %d MCP servers from npm, "+
		"%d queries written as an agent states a need, split by a hash of their text into `tune` (what the weights were chosen on) and "+
		"`heldout` (never tuned on). A hit is a right answer in the first %d results, as `search_tool_docs` returns by default. "+
		"Goal: recall@5 ≥ 0.9, recall@1 ≥ 0.7, MRR ≥ 0.8 on both splits, and ≤ 5 ms a query over 1,000 tools. "+
		"Measured by `TestSearchReport` (package `mcpbridge/toolsearch`) on %s, %d CPUs.\n\n", len(docs), len(servers), len(queries), searchEvalK,
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU())
	tallies := searchEvalTallies(queries, docs, options{}, nil)
	b.WriteString("| split / kind of query | queries | recall@1 | recall@5 | MRR |\n|---|---|---|---|---|\n")
	for _, split := range []string{"tune", "heldout", "all"} {
		for _, key := range append([]string{split}, split+"/"+searchEvalKinds[0], split+"/"+searchEvalKinds[1], split+"/"+searchEvalKinds[2]) {
			f := tallies[key].figures()
			name := key
			if key == split {
				name = "**" + key + "**"
			}
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.3f |\n", name, f.N, f.Recall1, f.Recall5, f.MRR)
		}
	}
	b.WriteString("\nA server nobody wrote tool keywords for (`TestSearchEvalUnseen`): each server's tools without their keywords in turn, the other servers' kept, on the queries that server alone answers.\n\n")
	b.WriteString("| split | queries | recall@1 | recall@5 | MRR |\n|---|---|---|---|---|\n")
	unseen := searchEvalUnseen(servers, queries)
	for _, split := range []string{"tune", "heldout", "all"} {
		f := unseen[split].figures()
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.3f |\n", split, f.N, f.Recall1, f.Recall5, f.MRR)
	}
	b.WriteString("\nAblation: each signal of the ranker turned off in turn (`options`), same queries.\n\n")
	b.WriteString(searchAblationTable(queries, docs))
	b.WriteString("\nTime (the evaluation's tools replicated; a query is one of the evaluation's in turn, each timed after its index is built; `go test -bench SearchTools ./mcpbridge/toolsearch/`).\n\n")
	b.WriteString("| tools | index build | per query (mean) | allocated per query |\n|---|---|---|---|\n")
	for _, n := range []int{1000, 10000} {
		mdocs := searchEvalReplicated(t, servers, n)
		start := time.Now()
		buildIndex(mdocs, true)
		build := time.Since(start)
		r := testing.Benchmark(func(b *testing.B) {
			Rank(queries[0].Q, mdocs, searchEvalK) // the index, cached
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Rank(queries[i%len(queries)].Q, mdocs, searchEvalK)
			}
		})
		fmt.Fprintf(&b, "| %d | %.1f ms | %.3f ms | %d KiB |\n", n, float64(build.Microseconds())/1000, float64(r.NsPerOp())/1e6, r.AllocedBytesPerOp()/1024)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}
