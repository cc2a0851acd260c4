//go:build remote

package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
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

var bindingsLogOnce sync.Once

// routeBindingsLogs sends what the Podman bindings log with logrus's global
// logger (to stderr, by default) to log at DEBUG: it is the library's
// chatter — "Failed to close STDIN for writing" when a sandbox ends — not
// the bridge's, and it must not reach a user's terminal.
func routeBindingsLogs(log *slog.Logger) {
	bindingsLogOnce.Do(func() {
		logrus.SetOutput(io.Discard)
		logrus.AddHook(slogHook{log: log})
	})
}

// A slogHook is a logrus hook writing entries to a slog.Logger.
type slogHook struct{ log *slog.Logger }

func (slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h slogHook) Fire(e *logrus.Entry) error {
	h.log.Debug("podman bindings", "level", e.Level.String(), "msg", e.Message)
	return nil
}
