package pyname

import (
	"encoding/json"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// kwlist is keyword.kwlist of CPython 3.10–3.14, written out here so that
// the fuzz targets do not check the package's list against itself.
var kwlist = []string{
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
	"elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
	"not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
}

func isKeyword(s string) bool { return slices.Contains(kwlist, s) }

// TestPythonKeywords compares the package's keywords with those of the
// host's python3.
func TestPythonKeywords(t *testing.T) {
	if !slices.Equal(slices.Sorted(maps.Keys(pythonKeywords)), slices.Sorted(slices.Values(kwlist))) {
		t.Fatalf("pythonKeywords is not kwlist: %v", slices.Sorted(maps.Keys(pythonKeywords)))
	}
	out, err := exec.Command("python3", "-c", "import json, keyword; print(json.dumps(keyword.kwlist))").Output()
	if err != nil {
		t.Skip("no python3 on this host")
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil || !slices.Equal(got, kwlist) {
		t.Fatalf("python3's keyword.kwlist is %s", out)
	}
}

// FuzzAliases checks that any names become distinct lowercase ASCII
// Python identifiers that are not keywords, one per name, in a
// deterministic way: a name's identifier is its alias unless an earlier
// name took it, then the first free "_2", "_3", …; identifier is
// idempotent and keeps a plain lowercase identifier as it is.
func FuzzAliases(f *testing.F) {
	for _, seed := range [][3]string{
		{"get-sum", "get_sum", "get sum"}, {"class", "2fa", "Class"}, {"Ünïcode ☃", "", "名前"},
		{"__", "a b", "-"}, {"_2", "x", "x"}, {"a", "a", "a_2"}, {"Stub Two", "stub-two", "STUB_TWO"},
		{"None", "true", "await"}, {"\u212a", "İ", "ß"}, {" filesystem ", "file\tsystem", "file__system"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	lowerIdentifier := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	plain := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		names := []string{a, b, c, a, b}
		got := Aliases(names, "tool")
		if len(got) != len(names) {
			t.Fatalf("Aliases(%q) = %q", names, got)
		}
		for i, s := range got {
			if !lowerIdentifier.MatchString(s) || isKeyword(s) || slices.Contains(got[:i], s) {
				t.Fatalf("Aliases(%q) = %q: %q is no fresh identifier", names, got, s)
			}
			base := Identifier(names[i], "tool")
			want := base
			for k := 2; slices.Contains(got[:i], want); k++ {
				want = base + "_" + strconv.Itoa(k)
			}
			if s != want {
				t.Fatalf("Aliases(%q)[%d] = %q, want %q", names, i, s, want)
			}
			if Identifier(base, "tool") != base {
				t.Fatalf("identifier not idempotent: %q → %q → %q", names[i], base, Identifier(base, "tool"))
			}
		}
		if again := Aliases(names, "tool"); !slices.Equal(again, got) {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
		for _, n := range names {
			if plain.MatchString(n) && !isKeyword(n) && Identifier(n, "tool") != n {
				t.Fatalf("a plain identifier changed: %q → %q", n, Identifier(n, "tool"))
			}
		}
	})
}

// TestPyRepr compares pyRepr with Python's repr of the same strings.
func TestPyRepr(t *testing.T) {
	for s, want := range map[string]string{"stub": `'stub'`, `a\b`: `'a\\b'`, "it's": `"it's"`, "": `''`} {
		if got := Repr(s); got != want {
			t.Errorf("Repr(%q) = %s, want %s", s, got, want)
		}
	}
}
