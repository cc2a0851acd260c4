package mcpbridge

//lint:file-ignore SA1019 MCP log messages are deprecated by SEP-2577 (protocol 2026-07-28) but stay functional for at least twelve months; clients that set a level still get the bridge's events.

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// eventLogger is the logger name of the bridge's log messages to clients.
const eventLogger = "mcp-server-code-execution-mode"

// The MCP log levels of the bridge's events.
const (
	levelWarning mcp.LoggingLevel = "warning"
	levelError   mcp.LoggingLevel = "error"
)

// eventTimeout bounds sending one event to a client.
const eventTimeout = 5 * time.Second

// A clientEvents sends the bridge's notable events for one client as MCP
// log messages (notifications/message): a sandbox replaced after a crash,
// a proxied server restarted, a limit hit. The go-sdk's ServerSession.Log
// sends one only after the client set a level with logging/setLevel, and
// only at or above that level. Each event is logged on the bridge's own
// log too. A nil clientEvents sends nothing.
type clientEvents struct {
	ss  atomic.Pointer[mcp.ServerSession] // nil until bind
	log *slog.Logger
}

// bind sends the events to the client of ss from now on.
func (e *clientEvents) bind(ss *mcp.ServerSession) { e.ss.Store(ss) }

// emit sends one event: msg, with attrs (key, value pairs) beside it in
// the message's data.
func (e *clientEvents) emit(level mcp.LoggingLevel, msg string, attrs ...any) {
	if e == nil {
		return
	}
	ss := e.ss.Load()
	if ss == nil {
		return
	}
	data := map[string]any{"message": msg}
	for i := 0; i+1 < len(attrs); i += 2 {
		if k, ok := attrs[i].(string); ok {
			data[k] = attrs[i+1]
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: eventLogger, Data: data}); err != nil {
		e.log.Debug("sending an event to the client", "event", msg, "err", err)
	}
}

type eventsKey struct{}

// withEvents returns ctx carrying e, for the proxies to report to.
func withEvents(ctx context.Context, e *clientEvents) context.Context {
	return context.WithValue(ctx, eventsKey{}, e)
}

// eventsOf returns the clientEvents ctx carries, or nil.
func eventsOf(ctx context.Context) *clientEvents {
	e, _ := ctx.Value(eventsKey{}).(*clientEvents)
	return e
}

// reportEvents sends the events of a finished call: its sandbox replaced
// or failed, its timeout or its output cap hit.
func reportEvents(e *clientEvents, res *entrypoint.Result, err error, timeout time.Duration) {
	switch {
	case err != nil:
		e.emit(levelError, "the sandbox failed", "error", err.Error())
	case res.StateLost:
		e.emit(levelWarning, "the sandbox was replaced; earlier state is gone", "notice", res.Notice)
	}
	if res == nil {
		return
	}
	if res.Status == entrypoint.StatusTimeout {
		e.emit(levelWarning, "a call ran past its timeout and was stopped", "timeout", timeout.String())
	}
	if res.Truncated {
		e.emit(levelWarning, "a call's output was over the cap; the rest was dropped (MCP_BRIDGE_MAX_OUTPUT)")
	}
}
