package engine

import (
	"strings"
	"sync"
)

// A LineTail keeps the last Max lines added to it, each cut to 500
// bytes: what a dying process said last, for error reports.
type LineTail struct {
	Max   int
	mu    sync.Mutex
	lines []string
}

// Add records a line.
func (t *LineTail) Add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(l) > 500 {
		l = l[:500] + "…"
	}
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
