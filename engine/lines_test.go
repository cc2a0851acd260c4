package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineTailKeepsTheLastLines(t *testing.T) {
	tail := &LineTail{Max: 2}
	for _, l := range []string{"a", "b", "c"} {
		tail.Add(l)
	}
	if got := tail.String(); got != "b | c" {
		t.Fatalf("String() = %q, want \"b | c\"", got)
	}
}

func TestLineTailCutsOnACharacterBoundary(t *testing.T) {
	for _, tt := range []struct {
		name string
		line string
		want string
	}{
		{"short", "ok", "ok"},
		{"ASCII", strings.Repeat("a", 600), strings.Repeat("a", 500) + "…"},
		{"exactly 500 bytes", strings.Repeat("é", 250), strings.Repeat("é", 250)},
		// After "a", the 2-byte characters start at odd offsets: byte
		// 500 is the second of one.
		{"2-byte characters, cut inside one", "a" + strings.Repeat("é", 300), "a" + strings.Repeat("é", 249) + "…"},
		{"3-byte characters", strings.Repeat("€", 200), strings.Repeat("€", 166) + "…"},
		{"4-byte characters", "ab" + strings.Repeat("😀", 200), "ab" + strings.Repeat("😀", 124) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tail := &LineTail{Max: 1}
			tail.Add(tt.line)
			got := tail.String()
			if !utf8.ValidString(got) {
				t.Fatalf("cut line is not valid UTF-8: %q", got)
			}
			if got != tt.want {
				t.Fatalf("got %d bytes %q…, want %d bytes", len(got), got[:min(len(got), 20)], len(tt.want))
			}
			if n := len(strings.TrimSuffix(got, "…")); n > 500 {
				t.Fatalf("kept %d bytes, more than 500", n)
			}
		})
	}
}

func TestLogWriter(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	tail := &LineTail{Max: 10}
	w := &logWriter{log: log, level: slog.LevelDebug, msg: "service", attrs: []any{"pid", 7}, tail: tail}
	for _, chunk := range []string{"first li", "ne\n\n  \nsecond\r\nthi", "rd"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got := tail.String(); got != "first line | second" {
		t.Fatalf("before Flush: tail %q; want the complete lines, no blank ones", got)
	}
	w.Flush()
	w.Flush()
	if got := tail.String(); got != "first line | second | third" {
		t.Fatalf("after Flush: tail %q", got)
	}
	want := `level=DEBUG msg=service pid=7 line="first line"
level=DEBUG msg=service pid=7 line=second
level=DEBUG msg=service pid=7 line=third
`
	if buf.String() != want {
		t.Fatalf("log:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestLogWriterBoundsALongLine(t *testing.T) {
	var n int
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) { n++; return len(b), nil }), nil))
	w := &logWriter{log: log, level: slog.LevelInfo, msg: "m"}
	chunk := bytes.Repeat([]byte("x"), 1<<10)
	for range 2 * maxLogLine / len(chunk) {
		w.Write(chunk)
	}
	if n != 2 || len(w.partial) != 0 {
		t.Fatalf("%d records and %d bytes held for a line of %d bytes; want it logged in 2 pieces", n, len(w.partial), 2*maxLogLine)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
