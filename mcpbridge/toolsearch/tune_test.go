package toolsearch

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// searchTunable is one weight of the ranker the tuner may move, with the
// values it tries.
type searchTunable struct {
	name   string
	p      *float64
	values []float64
}

func searchTunables() []searchTunable {
	var ts []searchTunable
	names := [numFields]string{"name", "title", "server", "summary", "desc", "param", "paramdesc", "keywords"}
	for f := range numFields {
		ts = append(ts, searchTunable{"fieldWeight." + names[f], &fieldWeight[f], []float64{0.1, 0.2, 0.35, 0.5, 0.6, 0.8, 1, 1.2, 1.5, 2, 2.5, 3, 4, 5}})
		ts = append(ts, searchTunable{"fieldB." + names[f], &fieldB[f], []float64{0, 0.2, 0.3, 0.5, 0.75, 0.9}})
	}
	return append(ts,
		searchTunable{"bm25K1", &bm25K1, []float64{0.5, 0.8, 1.2, 1.6, 2}},
		searchTunable{"handSynonymWeight", &handSynonymWeight, []float64{0.5, 0.7, 0.8, 0.9, 1}},
		searchTunable{"wordnetSynonymWeight", &wordnetSynonymWeight, []float64{0, 0.1, 0.2, 0.3, 0.5}},
		searchTunable{"coverageBonus", &coverageBonus, []float64{0, 0.25, 0.5, 1, 1.5, 2}},
		searchTunable{"nameBonus", &nameBonus, []float64{0, 0.5, 1, 2, 3, 4}},
		searchTunable{"questionBonus", &questionBonus, []float64{0, 0.5, 1, 2}},
		searchTunable{"verbBonus", &verbBonus, []float64{0, 0.5, 1, 2}},
		searchTunable{"pluralBonus", &pluralBonus, []float64{0, 1, 2, 3, 4}},
		searchTunable{"proximityBonus", &proximityBonus, []float64{0, 0.5, 1, 2}},
		searchTunable{"valueWeight", &valueWeight, []float64{0, 0.1, 0.2, 0.5, 1}},
	)
}

// TestSearchTune tunes the ranker's weights by coordinate ascent on the
// tune split of the evaluation, never looking at the held-out split, and
// logs the weights it ends with; it changes nothing in the source. It
// runs when MCP_SEARCHEVAL_TUNE is set.
//
//	MCP_SEARCHEVAL_TUNE=1 go test -count=1 -run SearchTune -v ./mcpbridge/toolsearch/
//
// The weights are read when ranking, not when indexing, so the cached
// index of the evaluation's tools serves every trial.
//
// The objective is recall@5 + MRR over the tune split, averaged between
// the evaluation as it is and the evaluation of a server nobody wrote
// tool keywords for (searchEvalUnseen): search must serve the servers a
// user configures that have no keywords as well as those that do. A move is
// taken only when it gains at least the worth of one query, so that
// weights are not moved for ties.
func TestSearchTune(t *testing.T) {
	if os.Getenv("MCP_SEARCHEVAL_TUNE") == "" {
		t.Skip("set MCP_SEARCHEVAL_TUNE=1 to tune")
	}
	servers, queries := loadSearchEval(t)
	docs := searchEvalCorpus(servers)
	var tune []searchEvalQuery
	for _, q := range queries {
		if q.Split == "tune" {
			tune = append(tune, q)
		}
	}
	// The unseen-server evaluation builds an index a server: keep them all.
	savedCache := indexCacheSize
	indexCacheSize = len(servers) + 2
	defer func() { indexCacheSize = savedCache }()
	objective := func() float64 {
		var ty searchEvalTally
		for _, q := range tune {
			ty.add(searchEvalRank(docs, Rank(q.Q, docs, searchEvalK), q.Want))
		}
		f := ty.figures()
		u := searchEvalUnseen(servers, tune)["tune"].figures()
		return (f.Recall5 + f.MRR + u.Recall5 + u.MRR) / 2
	}
	ts := searchTunables()
	saved := make([]float64, len(ts))
	for i, tn := range ts {
		saved[i] = *tn.p
	}
	defer func() {
		for i, tn := range ts {
			*tn.p = saved[i]
		}
	}()
	eps := 1 / float64(len(tune))
	best := objective()
	t.Logf("start: %.4f", best)
	for round := 0; round < 4; round++ {
		moved := false
		for _, tn := range ts {
			cur := *tn.p
			bv, bo := cur, best
			for _, v := range tn.values {
				if v == cur {
					continue
				}
				*tn.p = v
				if o := objective(); o > bo+eps/2 && o >= best+eps {
					bv, bo = v, o
				}
			}
			*tn.p = bv
			if bv != cur {
				t.Logf("round %d: %s %v -> %v: %.4f", round, tn.name, cur, bv, bo)
				best, moved = bo, true
			}
		}
		if !moved {
			break
		}
	}
	var b strings.Builder
	for _, tn := range ts {
		fmt.Fprintf(&b, "%s=%v ", tn.name, *tn.p)
	}
	t.Logf("end: %.4f\n%s", best, b.String())
}
