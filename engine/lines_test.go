package engine

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"slices"
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
	w := &LineLogger{Log: log, Level: slog.LevelDebug, Msg: "service", Attrs: []any{"pid", 7}, Tail: tail}
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
	w := &LineLogger{Log: log, Level: slog.LevelInfo, Msg: "m"}
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

func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		in    string
		max   int
		lines []string
		end   error // the error after the lines
	}{
		{"a\nbc\n", 10, []string{"a", "bc"}, io.EOF},
		{"a\n\nb", 10, []string{"a", "", "b"}, io.ErrUnexpectedEOF},
		{"", 10, nil, io.EOF},
		// Exactly max bytes before the newline is allowed; one more is not.
		{"0123456789\n", 10, []string{"0123456789"}, io.EOF},
		{"0123456789a\n", 10, nil, ErrLineTooLong},
		{"0123456789a", 10, nil, ErrLineTooLong},
		// Lines longer than the reader's buffer (16 bytes) are put together.
		{long + "\nok\n", 100, []string{long, "ok"}, io.EOF},
		{long + "\n", 99, nil, ErrLineTooLong},
	}
	for _, tt := range tests {
		r := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
		var got []string
		var err error
		for {
			var line []byte
			line, err = ReadLine(r, tt.max)
			if err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					got = append(got, string(line))
				}
				break
			}
			got = append(got, string(line))
		}
		if !errors.Is(err, tt.end) || !slices.Equal(got, tt.lines) {
			t.Errorf("%q (max %d): lines %q, then %v; want %q, then %v", tt.in, tt.max, got, err, tt.lines, tt.end)
		}
	}
}
