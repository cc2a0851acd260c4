package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxTailLine is the length in bytes beyond which LineTail cuts a line.
const maxTailLine = 500

// A LineTail keeps the last Max lines added to it, each cut to 500
// bytes: what a dying process said last, for error reports.
type LineTail struct {
	Max   int
	mu    sync.Mutex
	lines []string
}

// Add records a line. A line longer than 500 bytes is cut on a character
// boundary and marked with "…".
func (t *LineTail) Add(l string) {
	if len(l) > maxTailLine {
		cut := maxTailLine
		// Back up to the first byte of the character the cut falls in.
		for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(l[cut]); i++ {
			cut--
		}
		l = l[:cut] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > t.Max {
		t.lines = t.lines[1:]
	}
}

// String joins the kept lines with " | ".
func (t *LineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

// maxLogLine bounds the bytes a LineLogger holds while it waits for the
// end of a line: a longer line is logged in pieces.
const maxLogLine = 64 << 10

// A LineLogger is an io.Writer that logs each line written to it as one
// record, its text under the key "line", and keeps the last lines in Tail
// when Tail is set: for what a process writes on its stderr. Blank lines
// are skipped. Call Flush after the last write to log a final line that
// has no newline.
type LineLogger struct {
	// Log receives the records. Required.
	Log *slog.Logger
	// Level is the records' level. Zero: INFO.
	Level slog.Level
	// Msg is the records' message.
	Msg string
	// Attrs are more attributes of every record. Zero: none.
	Attrs []any
	// Tail, when not nil, also receives every line.
	Tail *LineTail

	mu      sync.Mutex
	partial []byte // the start of a line not yet ended
}

// Write logs the complete lines of b; it never fails.
func (w *LineLogger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		w.partial = append(w.partial, b[:i]...)
		w.emit()
		b = b[i+1:]
	}
	w.partial = append(w.partial, b...)
	if len(w.partial) >= maxLogLine {
		w.emit()
	}
	return n, nil
}

// Flush logs what was written after the last newline, if anything.
func (w *LineLogger) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit()
}

// emit logs and forgets the pending line.
func (w *LineLogger) emit() {
	line := strings.TrimSpace(string(w.partial))
	w.partial = w.partial[:0]
	if line == "" {
		return
	}
	if w.Tail != nil {
		w.Tail.Add(line)
	}
	w.Log.Log(context.Background(), w.Level, w.Msg, slices.Concat(w.Attrs, []any{"line", line})...)
}

// ErrLineTooLong reports a line over the limit given to ReadLine.
var ErrLineTooLong = errors.New("line over the limit")

// ReadLine reads one line from r and returns it without its '\n'. A line
// of more than max bytes fails with ErrLineTooLong as soon as it is known
// to be too long, without holding more than max bytes of it. At the end of
// the input, a last line without '\n' is returned with
// io.ErrUnexpectedEOF, and nothing left with io.EOF.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		content := len(chunk)
		if err == nil {
			content-- // the '\n'
		}
		if len(line)+content > max {
			return nil, fmt.Errorf("%w of %d bytes", ErrLineTooLong, max)
		}
		line = append(line, chunk[:content]...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
