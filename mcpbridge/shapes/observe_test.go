package shapes

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// observed merges the shapes of the results (JSON texts) as the calls of
// one tool would.
func observed(t *testing.T, results ...string) string {
	t.Helper()
	n := &Node{}
	for _, r := range results {
		v, ok := ValueOf(nil, r)
		if !ok {
			t.Fatalf("%s: not a JSON object or array", r)
		}
		n.merge(Observe(v))
	}
	return n.Text()
}

// TestObserve: keys seen twice are shown, those not always present
// marked "?"; keys made of data (varying, too many, not identifiers)
// make a dict; scalars merge into unions; nothing of a value is kept.
func TestObserve(t *testing.T) {
	for _, tt := range []struct {
		name    string
		results []string
		want    string
	}{
		{"stable keys", []string{`{"items":[{"id":1,"title":"a"}],"next":"x"}`, `{"items":[{"id":2,"title":"b"}],"next":null}`},
			`{"items": list[{"id": int, "title": str}], "next": str | None}`},
		{"an optional key", []string{`{"id":1,"draft":true}`, `{"id":2}`, `{"id":3,"draft":false}`}, `{"id": int, "draft"?: bool}`},
		{"one call: keys not yet told from data", []string{`{"id":1,"title":"a"}`}, `dict[str, int | str]`},
		{"keys that vary are data", []string{`{"alice":{"n":1}}`, `{"bob":{"n":2.5}}`}, `dict[str, {"n": float}]`},
		{"keys not identifiers are data", []string{`{"user name":1}`, `{"user name":2}`}, `dict[str, int]`},
		{"list elements count as observations", []string{`[{"sha":"a","size":1},{"sha":"b","size":2}]`}, `list[{"sha": str, "size": int}]`},
		{"mixed scalars", []string{`{"v":1}`, `{"v":"x"}`, `{"v":1.5}`}, `{"v": float | str}`},
		{"empty list", []string{`{"xs":[]}`, `{"xs":[]}`}, `{"xs": list[Any]}`},
		{"never a value", []string{`{"secret":"hunter2"}`, `{"secret":"hunter3"}`}, `{"secret": str}`},
	} {
		if got := observed(t, tt.results...); got != tt.want {
			t.Errorf("%s: %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// TestObserveBounds: many keys make a dict; the walk stops at MaxDepth
// ("…") and at maxListItems elements; long keys are data; a text result
// that is not a JSON object or array, or too long, is not observed.
func TestObserveBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range maxKeys + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString("}")
	if got := observed(t, b.String(), b.String()); got != "dict[str, int]" {
		t.Errorf("%d keys: %s", maxKeys+1, got)
	}
	deep := `1`
	for range 10 {
		deep = `{"x":` + deep + `}`
	}
	if got := observed(t, deep, deep); strings.Count(got, "{") != MaxDepth || !strings.Contains(got, `{"x": …}`) {
		t.Errorf("10 levels: %s", got)
	}
	long := strings.Repeat("k", 65)
	if got := observed(t, `{"`+long+`":1}`, `{"`+long+`":1}`); got != "dict[str, int]" {
		t.Errorf("a 65-byte key: %s", got)
	}
	var list []string
	for i := range 1000 {
		list = append(list, fmt.Sprintf(`{"i":%d}`, i))
	}
	list = append(list, `"a string after the 64th"`)
	if got := observed(t, "["+strings.Join(list, ",")+"]"); got != `list[{"i": int}]` {
		t.Errorf("1001 elements: %s", got)
	}
	for _, text := range []string{"hello", "42", `"a string"`, "{not json", "[" + strings.Repeat(" ", MaxTextBytes) + "]"} {
		if _, ok := ValueOf(nil, text); ok {
			t.Errorf("%.20q observed", text)
		}
	}
	if v, ok := ValueOf(map[string]any{"a": 1.0}, `{"b":2}`); !ok || v.(map[string]any)["a"] != 1.0 {
		t.Errorf("structured content first: %v", v)
	}
}

// TestStore: shapes recorded through a Store are kept in its directory
// (a file per server, whatever its name) and read by the next Store; a
// new server version starts afresh.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(&StoreOptions{Dir: dir, FlushDelay: time.Millisecond})
	for i := range 3 {
		s.Record("../gh server", "1.0", "list_issues", nil, fmt.Sprintf(`{"items": [{"id": %d}], "total": %d}`, i, i))
	}
	s.Close()
	s.Record("../gh server", "1.0", "list_issues", map[string]any{}, "") // after Close: ignored
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "_.._gh_server.json" {
		t.Fatalf("files: %v", entries)
	}
	s2 := NewStore(&StoreOptions{Dir: dir})
	defer s2.Close()
	text, calls, ok := s2.Get("../gh server", "list_issues")
	if !ok || calls != 3 || text != `{"items": list[{"id": int}], "total": int}` {
		t.Fatalf("read back: %q %d %v", text, calls, ok)
	}
	if _, _, ok := s2.Get("../gh server", "other"); ok {
		t.Error("a tool never called has a shape")
	}
	s2.Record("../gh server", "2.0", "list_issues", map[string]any{"x": "y"}, "")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, calls, _ := s2.Get("../gh server", "list_issues"); calls == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a new version did not start afresh")
		}
	}
	// Past paceAfter results, one a second.
	now := time.Unix(1_800_000_000, 0)
	s3 := NewStore(&StoreOptions{})
	s3.now = func() time.Time { return now }
	for range paceAfter + 10 {
		s3.Record("p", "1", "t", nil, `{"a": 1}`)
	}
	now = now.Add(paceEvery)
	s3.Record("p", "1", "t", nil, `{"a": 1}`)
	s3.Close()
	if _, calls, _ := s3.Get("p", "t"); calls != paceAfter+1 {
		t.Errorf("paced: %d results observed, want %d", calls, paceAfter+1)
	}

	var none *Store
	none.Record("a", "1", "b", nil, "")
	if _, _, ok := none.Get("a", "b"); ok {
		t.Error("a nil Store has shapes")
	}
	none.Close()
}
