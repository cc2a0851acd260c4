package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A pullPrinter shows an image pull's progress to a person on stderr
// (never stdout, which carries MCP frames under run): on a terminal one
// line redrawn, a bar, at most ten times a second; elsewhere plain
// lines, one when the pull begins, one per layer done and one at its
// end, so a log stays short.
type pullPrinter struct {
	w   io.Writer
	tty bool

	mu    sync.Mutex
	drawn time.Time // when the bar was last drawn; zero: never
	done  int       // layers done at the last plain line; -1: none yet
	open  bool      // a bar is on the line, not yet ended
	ended bool
	now   func() time.Time
}

// newPullPrinter returns a printer to w, drawing a bar when w is a
// terminal.
func newPullPrinter(w io.Writer) *pullPrinter {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &pullPrinter{w: w, tty: tty, done: -1, now: time.Now}
}

// barWidth is the bar's width in characters.
const barWidth = 24

// watch is the printer's engine.PullWatcher.
func (p *pullPrinter) watch(pr engine.PullProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	if p.tty {
		now := p.now()
		if !pr.Done && !p.drawn.IsZero() && now.Sub(p.drawn) < 100*time.Millisecond {
			return
		}
		p.drawn = now
		fmt.Fprintf(p.w, "\r\x1b[K%s", bar(pr))
		p.open = true
		if pr.Done {
			fmt.Fprintln(p.w)
			p.open = false
		}
		return
	}
	if pr.Done || p.done < 0 || pr.LayersDone != p.done {
		p.done = pr.LayersDone
		fmt.Fprintln(p.w, pr.String())
	}
}

// end finishes the printer's line, if a bar is on it; reports after it
// are not shown.
func (p *pullPrinter) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
	p.ended = true
}

// bar draws pr as "pulling python:3.14-slim [#########---------------]
// 37% 3/7 layers 45.2/120.0 MB".
func bar(pr engine.PullProgress) string {
	if pr.Done {
		return pr.String()
	}
	f := pr.Fraction()
	n := int(f * barWidth)
	s := fmt.Sprintf("pulling %s [%s%s] %3.0f%%", pr.Image, strings.Repeat("#", n), strings.Repeat("-", barWidth-n), 100*f)
	if pr.Layers > 0 {
		s += fmt.Sprintf(" %d/%d layers", pr.LayersDone, pr.Layers)
	}
	if pr.Total > 0 {
		s += fmt.Sprintf(" %.1f/%.1f MB", float64(pr.Bytes)/1e6, float64(pr.Total)/1e6)
	}
	return s
}
