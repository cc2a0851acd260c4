package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// TestStatus reads the status back from the result of each kind of
// outcome; a result in toon mode is an error or not alike.
func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		o    Outcome
		want string
	}{
		{FromSession(&entrypoint.Result{Status: entrypoint.StatusSuccess, Stdout: "hi\n"}, nil, nil, 0), "success"},
		{FromSession(&entrypoint.Result{Status: entrypoint.StatusTimeout}, nil, nil, 2), "timeout"},
		{FromSession(&entrypoint.Result{Status: entrypoint.StatusExit, ExitCode: 3}, nil, nil, 0), "error"},
		{FromSession(nil, errors.New("gone"), nil, 0), "error"},
		{Invalid("Missing 'code' argument"), "validation_error"},
		{NotRun("busy"), "error"},
		{Failed(errors.New("no engine")), "error"},
		{LoadFailed(errors.New("no such server"), []string{"x"}), "error"},
	} {
		res := tt.o.Result(Compact)
		if got := Status(res); got != tt.want || res.IsError != (tt.want != "success") {
			t.Errorf("%+v: status %q, IsError %v; want %q", tt.o, got, res.IsError, tt.want)
		}
		if res := tt.o.Result(TOON); res.IsError != (tt.want != "success") {
			t.Errorf("%+v in toon mode: IsError %v", tt.o, res.IsError)
		}
	}
	if got := Status(nil); got != "error" {
		t.Errorf("Status(nil) = %q", got)
	}
	if got := Status(&mcp.CallToolResult{}); got != "success" {
		t.Errorf("Status of a result of no payload = %q", got)
	}
}

// TestOutcomeWords keeps the wording of the outcomes the bridge makes
// without a session's result.
func TestOutcomeWords(t *testing.T) {
	for _, tt := range []struct {
		o             Outcome
		summary, text string
	}{
		{NotRun("busy"), "Not run: busy", "Not run: busy\nstatus: error\nerror: busy"},
		{Failed(errors.New("no engine")), "Sandbox error: no engine", "Sandbox error: no engine\nstatus: error\nerror: no engine"},
		{LoadFailed(errors.New("no such server"), []string{"x"}), "Loading MCP servers failed: no such server",
			"Loading MCP servers failed: no such server\nstatus: error\nerror: no such server"},
	} {
		if p := tt.o.payload(); p.Summary != tt.summary {
			t.Errorf("summary %q, want %q", p.Summary, tt.summary)
		}
		if got := tt.o.compactText(); got != tt.text {
			t.Errorf("text %q, want %q", got, tt.text)
		}
	}
	o := NotRun("busy")
	o.AddNotice("")
	o.AddNotice("first")
	o.AddNotice("second")
	if !strings.HasSuffix(o.compactText(), "notice: first; second") {
		t.Errorf("notices: %q", o.compactText())
	}
}

// TestSetSession puts the handle in the structured content of either
// mode's result, and leaves any other result as it is.
func TestSetSession(t *testing.T) {
	for _, mode := range []string{Compact, TOON} {
		res := FromSession(&entrypoint.Result{Status: entrypoint.StatusSuccess}, nil, nil, 0).Result(mode)
		SetSession(res, "h1")
		switch p := res.StructuredContent.(type) {
		case payload:
			if p.Session != "h1" {
				t.Errorf("%s: session %q", mode, p.Session)
			}
		case toonPayload:
			if p.Session != "h1" {
				t.Errorf("%s: session %q", mode, p.Session)
			}
		default:
			t.Errorf("%s: structured content %T", mode, p)
		}
	}
	other := &mcp.CallToolResult{StructuredContent: map[string]any{"a": 1}}
	SetSession(other, "h1")
	if _, ok := other.StructuredContent.(map[string]any)["session"]; ok {
		t.Error("a foreign result got a session")
	}
}

// TestSetForks: the forks' handles go in the structured content and one
// line of text before the rest, in both output modes.
func TestSetForks(t *testing.T) {
	for _, mode := range []string{Compact, TOON} {
		res := FromSession(&entrypoint.Result{Status: entrypoint.StatusSuccess, Stdout: "out\n"}, nil, nil, 0).Result(mode)
		SetForks(res, []string{"f1", "f2"})
		raw, _ := json.Marshal(res.StructuredContent)
		var got struct{ Forks []string }
		json.Unmarshal(raw, &got)
		if len(got.Forks) != 2 || got.Forks[1] != "f2" {
			t.Errorf("%s: structured content %s", mode, raw)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !strings.HasPrefix(text, "forks: f1 f2 (pass one as \"session\"") || !strings.Contains(text, "\n") {
			t.Errorf("%s: text %q", mode, text)
		}
	}
}

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
