package mcpbridge

import (
	"net/http"
	"sync"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/httpserve"
)

// HTTPPath is where the bridge serves MCP over Streamable HTTP.
const HTTPPath = httpserve.Path

// HTTPOptions configure the bridge's Streamable HTTP handler
// (httpserve.Options). The zero value serves loopback clients without a
// token.
type HTTPOptions = httpserve.Options

// CheckListen reports whether the bridge may serve on addr with opts:
// anywhere but loopback it takes a token.
func CheckListen(addr string, opts *HTTPOptions) error {
	return httpserve.CheckListen(addr, opts)
}

// HTTPHandler returns the bridge's Streamable HTTP handler
// (httpserve.NewHandler), serving MCP at HTTPPath: one MCP session
// (Mcp-Session-Id) per client, each with its own sandbox and servers,
// ended by DELETE, by SessionIdleTimeout or by Close. It also serves a
// health report at HealthPath and Prometheus metrics at MetricsPath
// (GET, HEAD), behind the same checks of Host, Origin and token (the
// token unless OpenProbes). With a ConsoleToken it serves the operator's
// console at console.Path, behind the Host and Origin checks and its own
// token. opts may be nil.
func (b *Bridge) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	health := &healthCheck{eng: b.eng, pool: b.pool, sessions: b.sessionCount, version: b.opts.Version,
		lanes: b.opts.Session.Lanes, sleepers: b.sleepers}
	c := httpserve.Config{Server: b.server, Bridge: httpBridge{b}, Requests: &b.requests,
		Health: health, Metrics: metricsHandler(b.metrics), Logger: b.log}
	if o.ConsoleToken != "" {
		if con, err := b.newConsole(o.ConsoleToken, o.Token, o.ConsoleSecureCookie, health); err != nil {
			b.log.Error("not serving the console", "err", err)
		} else {
			c.Console = con
		}
	}
	return httpserve.NewHandler(c, &o)
}

// An httpBridge is the bridge as its HTTP side sees it (httpserve.Bridge).
type httpBridge struct{ b *Bridge }

// Sessions returns how many MCP sessions the server has.
func (h httpBridge) Sessions() int { return h.b.sessionCount() }

// HaltCalls interrupts the calls of the MCP session id, which is ending.
func (h httpBridge) HaltCalls(id string) { h.b.haltCalls(id) }

// ListenTasks serves a subscriptions/listen request (body) naming tasks,
// and reports whether it did (tasks_listen.go); with tasks off it does
// not.
func (h httpBridge) ListenTasks(w http.ResponseWriter, r *http.Request, body []byte) bool {
	return h.b.tasks.Listen(w, r, body)
}

// sessionCount returns how many MCP sessions the server has.
func (b *Bridge) sessionCount() int {
	n := 0
	for range b.server.Sessions() {
		n++
	}
	return n
}

// CloseSessions ends every MCP session the bridge serves (their sandboxes
// and servers stop with them), as a server shutting down does.
func (b *Bridge) CloseSessions() {
	var wg sync.WaitGroup
	for ss := range b.server.Sessions() {
		wg.Add(1)
		go func() { defer wg.Done(); b.haltCalls(ss.ID()); ss.Close() }()
	}
	wg.Wait()
}

// haltCalls interrupts the calls of the MCP session whose Mcp-Session-Id
// is id, which is ending (closing it waits for its calls in flight).
func (b *Bridge) haltCalls(id string) {
	if id == "" {
		return
	}
	for ss := range b.server.Sessions() {
		if ss.ID() != id {
			continue
		}
		if cs := b.existing(ss); cs != nil {
			cs.halt()
		}
	}
}
