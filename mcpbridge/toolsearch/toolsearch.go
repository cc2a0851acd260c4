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

// A Doc is one tool as search reads it.
type Doc struct {
	Server      string // the server's name in the configuration
	ServerAlias string // the server's Python identifier
	Tool        string // the tool's name
	Title       string // the tool's title
	Description string // the tool's description
	Keywords    string // the operator's words for the tool (KeywordsFile), separated by spaces
	// Schema is the tool's input schema: a map, json.RawMessage or
	// anything that encodes as JSON. A schema held by reference must not
	// change once searched (the index of its tools is cached).
	Schema any
}

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
