// Package audit is the audit log: one JSON record a line for each
// run_python call and each proxied tool call, with the arguments' secret
// values hidden, in a file rotated by size.
package audit

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/jsontext"
)

// Defaults of Options.
const (
	defaultMaxBytes = 64 << 20
	defaultKeep     = 5
)

// warnEvery spaces the warnings of failed audit writes.
const warnEvery = time.Minute

// Options are the settings of a Log, given to Open; each zero value is
// a default.
type Options struct {
	// MaxBytes is the size past which the file is rotated: renamed to
	// PATH.1 (PATH.1 to PATH.2, …) and started anew. Zero: 64 MiB.
	MaxBytes int64
	// Keep is how many rotated files are kept. Zero: 5.
	Keep int
	// Logger receives the warnings of failed writes. Zero: discarded.
	Logger *slog.Logger
}

// A Log is an audit log: records appended to a file, one JSON object a
// line, each with an "event" field ("run_python", "tool_call", "egress");
// refusals are merged per session, target and reason a second (merge.go),
// with a "count". A line is
// written with one write on a file opened for appending, so lines of
// concurrent writers never interleave. A write that fails (a full disk)
// never fails the call it records: it is counted and logged as a warning,
// at most once a minute.
type Log struct {
	path string
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	f        *os.File
	size     int64
	regular  bool // only a regular file is rotated
	dropped  int64
	warnedAt time.Time
	tee      func(line []byte) // see Tee (nil: none)

	// Refusals merged (merge.go), under their own lock: a.write takes
	// a.mu.
	mergeMu        sync.Mutex
	windows        map[mergeKey]*mergeWindow
	sessionTargets map[string]int // a session's windows, mergedTarget's aside
	mergeClosed    bool
}

// Open opens (creating it, mode 0600) the audit log at path for
// appending. It fails, naming the path, when the file cannot be written:
// a directory, a read-only place, a missing directory.
func Open(path string, opts *Options) (*Log, error) {
	a := &Log{path: path}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.MaxBytes <= 0 {
		a.opts.MaxBytes = defaultMaxBytes
	}
	if a.opts.Keep <= 0 {
		a.opts.Keep = defaultKeep
	}
	a.log = a.opts.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if err := a.open(); err != nil {
		return nil, err
	}
	return a, nil
}

// open opens the file at a.path; a.mu is held or a is not shared yet.
func (a *Log) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening audit log: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return fmt.Errorf("opening audit log: %s is a directory", a.path)
	}
	a.f, a.size, a.regular = f, fi.Size(), fi.Mode().IsRegular()
	return nil
}

// write appends rec as one line, rotating the file first when the line
// would take it past MaxBytes.
func (a *Log) write(rec map[string]any) {
	if a == nil {
		return
	}
	rec["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	line, err := json.Marshal(rec)
	if err != nil {
		line, _ = json.Marshal(map[string]any{"time": rec["time"], "event": rec["event"], "error": "record not encodable: " + err.Error()})
	}
	// A bidi control or zero-width character (only ever inside a JSON
	// string) is written as its escape: the record means the same, and
	// reads as it is in a terminal or on the console.
	line = append([]byte(jsontext.EscapeCf(string(line))), '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tee != nil {
		a.tee(line[:len(line)-1])
	}
	if a.f == nil {
		a.failed(fmt.Errorf("the audit log is closed"))
		return
	}
	if a.regular && a.size > 0 && a.size+int64(len(line)) > a.opts.MaxBytes {
		if err := a.rotate(); err != nil {
			a.failed(err)
			if a.f == nil {
				return
			}
		}
	}
	n, err := a.f.Write(line)
	a.size += int64(n)
	if err != nil {
		a.failed(fmt.Errorf("writing audit log %s: %w", a.path, err))
	}
}

// rotate renames the file to PATH.1, shifting the older ones and dropping
// the oldest, and opens a new one; a.mu is held.
func (a *Log) rotate() error {
	a.f.Close()
	a.f = nil
	os.Remove(a.path + "." + strconv.Itoa(a.opts.Keep))
	for i := a.opts.Keep - 1; i >= 1; i-- {
		os.Rename(a.path+"."+strconv.Itoa(i), a.path+"."+strconv.Itoa(i+1))
	}
	renameErr := os.Rename(a.path, a.path+".1")
	if err := a.open(); err != nil {
		return err
	}
	if renameErr != nil {
		return fmt.Errorf("rotating audit log: %w", renameErr)
	}
	return nil
}

// failed counts a record lost and warns, at most once a minute; a.mu is
// held.
func (a *Log) failed(err error) {
	a.dropped++
	if time.Since(a.warnedAt) < warnEvery {
		return
	}
	a.warnedAt = time.Now()
	a.log.Warn("audit records are being lost; calls go on", "path", a.path, "lost", a.dropped, "err", err)
}
