package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestPullPrinterPlain: off a terminal, a line when the pull begins, one
// per layer done and one at the end; nothing after end.
func TestPullPrinterPlain(t *testing.T) {
	var b strings.Builder
	p := newPullPrinter(&b)
	for _, pr := range []engine.PullProgress{
		{Image: "i", Layers: 2},
		{Image: "i", Layers: 2, Bytes: 10, Total: 100},
		{Image: "i", Layers: 2, Bytes: 50, Total: 100},
		{Image: "i", Layers: 2, LayersDone: 1, Bytes: 60, Total: 100},
		{Image: "i", Layers: 2, LayersDone: 2, Done: true},
	} {
		p.watch(pr)
	}
	p.end()
	p.watch(engine.PullProgress{Image: "i", Done: true})
	want := "pulling i: 0 of 2 layers\npulling i: 1 of 2 layers, 0.0 of 0.0 MB\npulled i\n"
	if b.String() != want {
		t.Fatalf("printed %q, want %q", b.String(), want)
	}
}

// TestPullPrinterBar: on a terminal, one line redrawn at most ten times
// a second, ended by the pull's end.
func TestPullPrinterBar(t *testing.T) {
	var b strings.Builder
	p := newPullPrinter(&b)
	p.tty = true
	clock := time.Unix(0, 0)
	p.now = func() time.Time { return clock }
	p.watch(engine.PullProgress{Image: "i", Layers: 4, LayersDone: 1, Bytes: 25, Total: 100})
	p.watch(engine.PullProgress{Image: "i", Layers: 4, LayersDone: 1, Bytes: 30, Total: 100}) // too soon
	clock = clock.Add(time.Second)
	p.watch(engine.PullProgress{Image: "i", Layers: 4, LayersDone: 2, Bytes: 50, Total: 100})
	p.watch(engine.PullProgress{Image: "i", Layers: 4, LayersDone: 4, Done: true})
	p.end()
	want := "\r\x1b[Kpulling i [######------------------]  25% 1/4 layers 0.0/0.0 MB" +
		"\r\x1b[Kpulling i [############------------]  50% 2/4 layers 0.0/0.0 MB" +
		"\r\x1b[Kpulled i\n"
	if b.String() != want {
		t.Fatalf("printed %q,\nwant    %q", b.String(), want)
	}
}
