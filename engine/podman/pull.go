//go:build remote

package podman

import (
	"bytes"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A pullLines reads the text a Podman service streams while it pulls an
// image (the progress writer of images.Pull) and tallies its layers for
// a PullWatcher: "Copying blob sha256:…" names one, "Copying blob … done"
// or "… skipped: already exists" says it is present. The service says
// nothing of bytes, so the watcher gets layers only.
type pullLines struct {
	tally *engine.LayerTally
	watch engine.PullWatcher
	line  []byte // the line being read, bounded
}

// maxPullLine bounds a line of the service's text kept for reading.
const maxPullLine = 4096

// Write implements io.Writer; it never fails.
func (p *pullLines) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.line = append(p.line, b[:min(len(b), maxPullLine-len(p.line))]...)
			break
		}
		p.line = append(p.line, b[:min(i, maxPullLine-len(p.line))]...)
		p.read(string(p.line))
		p.line = p.line[:0]
		b = b[i+1:]
	}
	return n, nil
}

// read tallies one line; it reports to the watcher when it was a blob's.
func (p *pullLines) read(line string) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Copying blob ")
	if !ok {
		return
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return
	}
	id := strings.TrimPrefix(fields[0], "sha256:")
	id = id[:min(12, len(id))]
	if strings.Contains(rest, " done") || strings.Contains(rest, "skipped") || strings.Contains(rest, "already exists") {
		p.tally.Done(id)
	} else {
		p.tally.Seen(id)
	}
	if p.watch != nil {
		p.watch(p.tally.Progress())
	}
}
