package mcpbridge

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"testing"
)

func TestZZEmbed2(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	var words []string
	b, _ := os.ReadFile("/tmp/embed/words2.json")
	json.Unmarshal(b, &words)
	raw, err := os.ReadFile("/tmp/embed/words2.f32")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]float32{}
	for i, w := range words {
		v := make([]float32, 512)
		for k := range v {
			v[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[(i*512+k)*4:]))
		}
		m[w] = v
	}
	servers, queries := loadSearchEval(t)
	docs, schemas := searchEvalCorpus(servers)
	// document frequency of raw words over the tools, for idf weights
	df := map[string]int{}
	for _, d := range docs {
		seen := map[string]bool{}
		splitWords(d.Tool+" "+d.Title+" "+d.Description, func(w string) { seen[w] = true })
		for w := range seen {
			df[w]++
		}
	}
	wt := func(w string) float64 {
		return math.Log(1 + float64(len(docs))/float64(1+df[w]))
	}
	vec := func(text string, acc []float64, scale float64) {
		splitWords(text, func(w string) {
			if isStopword(w) {
				return
			}
			v, ok := m[w]
			if !ok {
				return
			}
			s := wt(w) * scale
			for i, x := range v {
				acc[i] += s * float64(x)
			}
		})
	}
	norm := func(a []float64) {
		var s float64
		for _, x := range a {
			s += x * x
		}
		if s == 0 {
			return
		}
		s = math.Sqrt(s)
		for i := range a {
			a[i] /= s
		}
	}
	dv := make([][]float64, len(docs))
	for i, d := range docs {
		v := make([]float64, 512)
		vec(d.Tool, v, 2)
		vec(d.Title, v, 1)
		s, rest := firstSentence(d.Description)
		vec(s, v, 1)
		if os.Getenv("ZZREST") != "" {
			vec(rest, v, 0.3)
		}
		norm(v)
		dv[i] = v
	}
	ix := cachedSearchIndex(docs, schemas, true)
	for _, lam := range []float64{0, 0.5, 1, 2, 3, 4, 6, 8, 12} {
		tallies := map[string]*searchEvalTally{}
		for _, q := range queries {
			sc := ix.rank(q.Q, searchOptions{})
			qv := make([]float64, 512)
			vec(q.Q, qv, 1)
			norm(qv)
			type r struct {
				i int
				s float64
			}
			var rs []r
			for i := range docs {
				s := 0.0
				if sc != nil {
					s = sc[i]
				}
				var c float64
				for k := range qv {
					c += qv[k] * dv[i][k]
				}
				s += lam * c
				if s > 0 {
					rs = append(rs, r{i, s})
				}
			}
			sort.SliceStable(rs, func(a, b int) bool { return rs[a].s > rs[b].s })
			var res []toolDoc
			for k := 0; k < len(rs) && k < searchEvalK; k++ {
				res = append(res, docs[rs[k].i])
			}
			rank := searchEvalRank(res, q.Want)
			for _, key := range []string{q.Split, q.Split + "/" + q.Kind} {
				if tallies[key] == nil {
					tallies[key] = &searchEvalTally{}
				}
				tallies[key].add(rank)
			}
		}
		f := tallies["tune"].figures()
		fo := tallies["tune/own-words"].figures()
		fmt.Printf("lam %.1f  tune %.3f/%.3f/%.3f obj %.4f own-words r5 %.3f\n", lam, f.Recall1, f.Recall5, f.MRR, f.Recall5+f.MRR, fo.Recall5)
		if os.Getenv("ZZHELD") != "" {
			h := tallies["heldout"].figures()
			fmt.Printf("          heldout %.3f/%.3f/%.3f\n", h.Recall1, h.Recall5, h.MRR)
		}
	}
}
