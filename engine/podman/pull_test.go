//go:build remote

package podman

import (
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestPullLines: the service's text, in pieces that split lines, gives
// one report per blob line, layers begun and done, nothing else.
func TestPullLines(t *testing.T) {
	var got []engine.PullProgress
	w := &pullLines{tally: engine.NewLayerTally("img"), watch: func(p engine.PullProgress) { got = append(got, p) }}
	text := "Trying to pull docker.io/library/python:3.14-slim...\nGetting image source signatures\n" +
		"Copying blob sha256:0123456789abcdef0123\nCopying blob sha256:fedcba9876543210fedc\r\n" +
		"Copying blob 0123456789ab done\nCopying blob fedcba987654 skipped: already exists\n" +
		"Copying config sha256:aaaa done\nWriting manifest to image destination\n" + strings.Repeat("x", 10000) + "\n"
	for len(text) > 0 {
		n := min(7, len(text))
		w.Write([]byte(text[:n]))
		text = text[n:]
	}
	if len(got) != 4 {
		t.Fatalf("%d reports, want 4 (one per blob line): %+v", len(got), got)
	}
	if last := got[3]; last.Layers != 2 || last.LayersDone != 2 || last.Total != 0 {
		t.Fatalf("last %+v, want 2 of 2 layers, no bytes", last)
	}
	if len(w.line) != 0 {
		t.Fatalf("%d bytes left of a finished line", len(w.line))
	}
}
