package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutMiddle(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes of 2-byte characters
	got := cutMiddle(s, 51, "sandbox://output/3")
	if !utf8.ValidString(got) {
		t.Fatalf("cut inside a character: %q", got)
	}
	if !strings.Contains(got, "cut to fit the output budget; the whole output: sandbox://output/3") {
		t.Fatalf("no marker: %q", got)
	}
	if cutMiddle("short", 10, "x") != "short" {
		t.Fatal("a string within the budget was changed")
	}
}

// TestOutputs keeps the last KeptOutputs outputs under their URIs and
// serves them; one no longer kept, or a URI of no output, is not found.
func TestOutputs(t *testing.T) {
	var s Outputs
	var uris []string
	for i := range KeptOutputs + 2 {
		uris = append(uris, s.Keep(strings.Repeat("x", i)))
	}
	if uris[0] != "sandbox://output/1" || uris[len(uris)-1] != "sandbox://output/10" {
		t.Fatalf("URIs %q", uris)
	}
	for i, uri := range uris {
		res, err := s.Read(uri)
		if kept := i >= 2; (err == nil) != kept {
			t.Fatalf("%s: %v; want kept %v", uri, err, kept)
		}
		if err == nil && (res.Contents[0].Text != strings.Repeat("x", i) || res.Contents[0].URI != uri || res.Contents[0].MIMEType != "text/plain") {
			t.Fatalf("%s: %+v", uri, res.Contents[0])
		}
	}
	for _, uri := range []string{"sandbox://output/x", "sandbox://output/", "sandbox://files/3", "3"} {
		if _, err := s.Read(uri); err == nil {
			t.Fatalf("%s was read", uri)
		}
	}
}

// TestApplyBudget cuts both streams of an outcome over the budget and
// keeps the whole output once; one within it is left as it is.
func TestApplyBudget(t *testing.T) {
	o := Outcome{status: statusSuccess, summary: "Success", stdout: strings.Repeat("out\n", 1000), stderr: strings.Repeat("err\n", 1000)}
	var kept []string
	o.ApplyBudget(1000, func(whole string) string { kept = append(kept, whole); return "sandbox://output/7" })
	if len(kept) != 1 || !strings.HasPrefix(kept[0], "out\n") || !strings.HasSuffix(kept[0], "err") {
		t.Fatalf("kept %d outputs", len(kept))
	}
	if len(o.stdout)+len(o.stderr) > 1000+200 || o.output != "sandbox://output/7" || !strings.Contains(o.stderr, "sandbox://output/7") {
		t.Fatalf("cut to %d+%d bytes, output %q", len(o.stdout), len(o.stderr), o.output)
	}
	small := Outcome{status: statusSuccess, stdout: "hi\n"}
	small.ApplyBudget(1000, func(string) string { t.Fatal("kept an output within the budget"); return "" })
	if small.stdout != "hi\n" || small.output != "" {
		t.Fatalf("small outcome changed: %+v", small)
	}
}
