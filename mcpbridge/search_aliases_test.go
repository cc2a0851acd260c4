package mcpbridge

import (
	"strings"
	"testing"
)

// TestToolAliasData checks the aliases' table against the evaluation's
// recorded servers: every entry finds its tool (its name and the first
// sentence of its description), no tool has two entries, and its words
// are single lowercase words, 10 to 40 of them.
func TestToolAliasData(t *testing.T) {
	servers, _ := loadSearchEval(t)
	recorded := map[[2]string]bool{}
	for _, s := range servers {
		for _, tool := range s.Tools {
			summary, _ := firstSentence(tool.Description)
			recorded[[2]string{tool.Name, foldSummary(summary)}] = true
		}
	}
	seen := map[[2]string]bool{}
	for _, a := range toolAliasData {
		key := [2]string{a.tool, foldSummary(a.summary)}
		if !recorded[key] {
			t.Errorf("aliases of %s (%q): no recorded tool has that name and first sentence", a.tool, a.summary)
		}
		if seen[key] {
			t.Errorf("aliases of %s (%q): written twice", a.tool, a.summary)
		}
		seen[key] = true
		words := strings.Fields(a.words)
		for _, w := range words {
			var split []string
			splitWords(w, func(x string) { split = append(split, x) })
			if len(split) != 1 || split[0] != w {
				t.Errorf("aliases of %s: %q is not one lowercase word", a.tool, w)
			}
		}
		if len(words) < 10 || len(words) > 40 {
			t.Errorf("aliases of %s: %d words, want 10 to 40", a.tool, len(words))
		}
	}
	if len(toolAliasData) < len(recorded)*9/10 {
		t.Errorf("%d tools have aliases of %d recorded", len(toolAliasData), len(recorded))
	}
}

func TestAliasWords(t *testing.T) {
	a := toolAliasData[0]
	if got := aliasWords(a.tool, a.summary); got != a.words {
		t.Errorf("aliasWords(%q, %q) = %q, want %q", a.tool, a.summary, got, a.words)
	}
	// Case, spacing and a final full stop are folded.
	folded := "  " + a.summary + " "
	if got := aliasWords(a.tool, folded); got != a.words {
		t.Errorf("folded summary: %q, want %q", got, a.words)
	}
	// A tool of the same name whose description says something else, or
	// a tool nobody wrote aliases for, has none.
	for _, c := range [][2]string{{a.tool, "Something else entirely."}, {"no_such_tool", a.summary}, {"", ""}} {
		if got := aliasWords(c[0], c[1]); got != "" {
			t.Errorf("aliasWords(%q, %q) = %q, want none", c[0], c[1], got)
		}
	}
}
