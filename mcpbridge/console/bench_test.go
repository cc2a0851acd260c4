package console

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// fullSnapshot is a replica at the console's bounds: 64 sessions, a call
// in flight in each with 20 output lines of 200 bytes (line: markup,
// which JSON escapes to 6 bytes a character, is the worst case), 8
// questions and 200 audit records of 400 bytes.
func fullSnapshot(line string) Snapshot {
	s := Snapshot{Replica: "replica-a", Host: "host", Version: "v1.2.3", Status: "ok", Engine: "docker",
		Engines: []EngineState{{Name: "docker", Up: true, Sandboxes: 66}}, Pool: Pool{Ready: 2, Size: 2}, AuditOn: true}
	for i := range 64 {
		name := fmt.Sprintf("session-%d", i+1)
		s.Sessions = append(s.Sessions, Session{Name: name, MCPSession: "replica-a.ABCDEF…", Engine: "docker",
			Container: "0123456789ab", Age: float64(i * 60), Calls: int64(i), Busy: true, Memory: int64(i+16) << 20})
		out := make([]string, 20)
		for j := range out {
			out[j] = line
		}
		s.Calls = append(s.Calls, Call{ID: int64(i + 1), Session: name, Elapsed: 3.5, Code: strings.Repeat("x", 120), Output: out})
	}
	for i := range 8 {
		s.Questions = append(s.Questions, Question{ID: fmt.Sprintf("q%d", i), Session: "session-1", Server: "everything", Tool: "get-sum",
			Message: strings.Repeat("m", 200), Arguments: `{"a":40,"b":2}`, Line: 3, Waiting: 1})
	}
	for range 200 {
		s.Audit = append(s.Audit, Record{Time: "2026-11-26T16:12:53.895606515Z", Event: "tool_call", Session: "session-1", Detail: strings.Repeat("d", 400)})
	}
	return s
}

// BenchmarkConsolePush is the work of one pushed update at the bounds:
// the change check's key and the event's JSON (the event's bytes
// reported), for plain-text output and for markup.
func BenchmarkConsolePush(b *testing.B) {
	for _, v := range []struct{ name, line string }{{"text", textLine}, {"markup", markupLine}} {
		b.Run(v.name, func(b *testing.B) { benchPush(b, fullSnapshot(v.line)) })
	}
}

// Output lines of 200 bytes: plain text, and markup.
var (
	textLine   = strings.Repeat("row 17: mean 0.4213, sd 0.0871; ", 7)[:200]
	markupLine = strings.Repeat(`<script>alert("x")</script> & `, 7)[:200]
)

func benchPush(b *testing.B, s Snapshot) {
	var n int
	for b.Loop() {
		key, _ := json.Marshal(s.stable())
		body, _ := json.Marshal(s)
		if len(key) == 0 {
			b.Fatal("no change key")
		}
		n = len(body) // the key is compared, not sent
	}
	b.ReportMetric(float64(n), "bytes/event")
}

// BenchmarkConsolePage renders the whole page, server-side, at the bounds.
func BenchmarkConsolePage(b *testing.B) {
	d := pageData{Snapshot: fullSnapshot(textLine), Operator: "Ada", CSRF: "csrf"}
	var w countingWriter
	for b.Loop() {
		w = 0
		if err := templates.ExecuteTemplate(&w, "console.html", d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w), "bytes/page")
}

// A countingWriter counts what is written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
