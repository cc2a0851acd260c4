//go:build remote

package engine

import (
	"context"
	"log/slog"
	"strings"
	"time"
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
