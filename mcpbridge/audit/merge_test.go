package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readRecords returns the records of the log at path.
func readRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// counts sums the count of each record by f's name for it.
func counts(recs []map[string]any, f func(map[string]any) string) map[string]int {
	out := map[string]int{}
	for _, rec := range recs {
		n, _ := rec["count"].(float64)
		out[f(rec)] += int(n)
	}
	return out
}

// TestRefusalsMerged: 10,000 refused connections of one session to one
// target for one reason, and as many refused tool calls, make a few
// records whose counts add up; another reason, another session and an
// allowed connection are kept apart; Close writes what is pending.
func TestRefusalsMerged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for range 10000 {
		a.Egress(Egress{Host: "evil.example", Port: 443, Began: began, Outcome: "denied", Reason: "not allowed", Session: "s1",
			Method: "GET", Path: "/x"})
		a.ToolCall(ToolCall{Server: "gh", Tool: "push", Arguments: map[string]any{"pad": strings.Repeat("p", 4000)}, Began: began,
			Outcome: "denied", Err: errors.New("more than 1000 proxied tool calls"), Session: "s1"})
	}
	a.Egress(Egress{Host: "evil.example", Port: 443, Began: began, Outcome: "denied", Reason: "too many connections", Session: "s1"})
	a.Egress(Egress{Host: "evil.example", Port: 443, Began: began, Outcome: "denied", Reason: "not allowed", Session: "s2"})
	a.Egress(Egress{Host: "ok.example", Port: 443, Began: began, Outcome: "allowed", Session: "s1"})
	// Each of the two merged targets writes its first refusal at once and
	// then a record a window for as long as the loop went on (a loaded
	// machine under -race takes seconds): the bound follows the loop's
	// time, far below the 20,000 records of unmerged refusals.
	windows := int(time.Since(began)/MergeWindow) + 1
	maxRecs := 2*(windows+1) + 3
	if fi, _ := os.Stat(path); fi.Size() > int64(maxRecs)*2<<10 {
		t.Errorf("the log holds %d bytes after 20,000 refusals in %d windows", fi.Size(), windows)
	}
	a.Close()
	recs := readRecords(t, path)
	if len(recs) > maxRecs {
		t.Errorf("%d records for 20,000 refusals in %d windows, want at most %d", len(recs), windows, maxRecs)
	}
	got := counts(recs, func(r map[string]any) string {
		return fmt.Sprint(r["event"], " ", r["session"], " ", r["host"], r["tool"], " ", r["reason"], r["error"])
	})
	want := map[string]int{
		"egress s1 evil.example<nil> not allowed<nil>":                  10000,
		"tool_call s1 <nil>push <nil>more than 1000 proxied tool calls": 10000,
		"egress s1 evil.example<nil> too many connections<nil>":         1,
		"egress s2 evil.example<nil> not allowed<nil>":                  1,
		"egress s1 ok.example<nil> <nil><nil>":                          0,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: count %d, want %d (%v)", k, got[k], n, got)
		}
	}
}

// TestRefusalsMergedOverTime: a loop over seconds makes about one record
// a second, each with "since" and a count, the first at once.
func TestRefusalsMergedOverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 3 s")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	refuse := func() {
		a.Egress(Egress{Host: "h", Port: 80, Began: time.Now(), Outcome: "denied", Reason: "r", Session: "s"})
	}
	refuse()
	if recs := readRecords(t, path); len(recs) != 1 || recs[0]["count"] != 1.0 {
		t.Fatalf("the first refusal is not written at once: %v", recs)
	}
	n := 1
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); n++ {
		refuse()
		time.Sleep(time.Millisecond)
	}
	time.Sleep(2 * MergeWindow)
	recs := readRecords(t, path)
	if len(recs) < 3 || len(recs) > 5 {
		t.Errorf("%d records for a 2.5 s loop", len(recs))
	}
	total := 0
	for i, rec := range recs {
		total += int(rec["count"].(float64))
		if i > 0 && rec["since"] == nil {
			t.Errorf("record %d has no since: %v", i, rec)
		}
	}
	if total != n {
		t.Errorf("counts add up to %d, want %d", total, n)
	}
	a.Close()
}

// TestRefusalsMergedAcrossTargets: a session refused at made-up targets
// keeps maxTargetsPerSession apart and merges the rest into target "*".
func TestRefusalsMergedAcrossTargets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		a.Egress(Egress{Host: fmt.Sprintf("h%d.example", i), Port: 443, Began: time.Now(), Outcome: "denied", Reason: "not allowed", Session: "s"})
	}
	a.Close()
	recs := readRecords(t, path)
	if len(recs) > maxTargetsPerSession+2 {
		t.Errorf("%d records for 5,000 targets", len(recs))
	}
	got := counts(recs, func(r map[string]any) string { return fmt.Sprint(r["target"]) })
	if got[mergedTarget] != 5000-maxTargetsPerSession || got["<nil>"] != maxTargetsPerSession {
		t.Errorf("counts %v", got)
	}
}
