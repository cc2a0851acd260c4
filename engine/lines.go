package engine

import (
	"bytes"
	"context"
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

// maxLogLine bounds the bytes a logWriter holds while it waits for the end
// of a line: a longer line is logged in pieces.
const maxLogLine = 64 << 10

// A logWriter logs each line written to it as one record, its text under
// the key "line", and keeps the last lines in tail when tail is set.
// Blank lines are skipped. Call Flush after the last write to log a
// final line that has no newline.
type logWriter struct {
	log   *slog.Logger
	level slog.Level
	msg   string
	attrs []any     // more attributes of every record
	tail  *LineTail // when not nil, also receives every line

	mu      sync.Mutex
	partial []byte // the start of a line not yet ended
}

// Write logs the complete lines of b; it never fails.
func (w *logWriter) Write(b []byte) (int, error) {
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
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit()
}

// emit logs and forgets the pending line.
func (w *logWriter) emit() {
	line := strings.TrimSpace(string(w.partial))
	w.partial = w.partial[:0]
	if line == "" {
		return
	}
	if w.tail != nil {
		w.tail.Add(line)
	}
	w.log.Log(context.Background(), w.level, w.msg, slices.Concat(w.attrs, []any{"line", line})...)
}
