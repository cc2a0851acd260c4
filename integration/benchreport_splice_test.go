//go:build integration

package integration

import (
	"errors"
	"strings"
	"testing"
)

// TestSpliceReport: a run replaces the generated part of BENCHMARKS.md
// and keeps the hand-written text around it byte for byte; a file
// without its markers, or with them out of order or twice, is refused
// rather than overwritten; a missing file is made with the markers.
func TestSpliceReport(t *testing.T) {
	hand := "# Benchmarks\n\nRead me first.\n\n"
	after := "\n\n## Measured apart (by hand)\n\nA note.\n\n## Findings\n\n- found\n"
	old := hand + generatedBegin + "\n\nold tables\n\n" + generatedEnd + after
	got, err := spliceReport([]byte(old), "\nnew tables\n")
	if err != nil {
		t.Fatal(err)
	}
	want := hand + generatedBegin + "\n\nnew tables\n\n" + generatedEnd + after
	if string(got) != want {
		t.Fatalf("spliced:\n%s\nwant:\n%s", got, want)
	}
	// Twice gives the same file: nothing accumulates.
	again, err := spliceReport(got, "new tables")
	if err != nil || string(again) != want {
		t.Fatalf("spliced again: %v\n%s", err, again)
	}
	for name, bad := range map[string]string{
		"no markers":   "# Benchmarks\n\nhand only\n",
		"end only":     "x\n" + generatedEnd + "\n",
		"out of order": generatedEnd + "\n" + generatedBegin + "\n",
		"twice":        old + old,
	} {
		if _, err := spliceReport([]byte(bad), "t"); !errors.Is(err, errNoMarkers) {
			t.Errorf("%s: %v, want errNoMarkers", name, err)
		}
	}
	fresh, err := spliceReport(nil, "t")
	if err != nil || !strings.HasPrefix(string(fresh), "# Benchmarks\n\n"+generatedBegin) || !strings.Contains(string(fresh), generatedEnd) {
		t.Fatalf("a new file: %v\n%s", err, fresh)
	}
}
