package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"
)

// loggerOrDiscard returns l, or a logger that discards everything.
func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// containerName returns a unique, readable container name for session.
func containerName(session string) string {
	var b [4]byte
	rand.Read(b[:])
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, session)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	if clean == "" {
		clean = "sandbox"
	}
	return "mcp-sbx-" + clean + "-" + hex.EncodeToString(b[:])
}

// shortID abbreviates a container ID for logs.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// cleanupContext returns a context for clean-up work that the caller's
// cancellation cannot cut short, bounded by its own timeout.
func cleanupContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// Bounds of engine calls made on clean-up paths.
const (
	inspectTimeout = 10 * time.Second
	cleanupTimeout = 20 * time.Second
)

// A mergedCtx has the deadline and cancellation of its Context and, where
// that has no value for a key, the values of values.
type mergedCtx struct {
	context.Context
	values context.Context
}

func (c mergedCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// mergeValues returns ctx with the values of values added.
func mergeValues(ctx, values context.Context) context.Context { return mergedCtx{ctx, values} }

// A valuesOnly context has the values of its parent but never ends.
type valuesOnly struct{ context.Context }

func (valuesOnly) Deadline() (time.Time, bool) { return time.Time{}, false }
func (valuesOnly) Done() <-chan struct{}       { return nil }
func (valuesOnly) Err() error                  { return nil }

// A logWriter turns written lines into log records.
type logWriter struct {
	log   *slog.Logger
	msg   string
	attrs []any
}

func (w *logWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			w.log.Info(w.msg, append(w.attrs, "line", line)...)
		}
	}
	return len(b), nil
}
