//go:build remote

package podman

import (
	"io"
	"log/slog"
	"sync"

	"github.com/sirupsen/logrus"
)

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
