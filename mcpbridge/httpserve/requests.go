package httpserve

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestHeader carries, from NewHandler's handler to the tool handler,
// the key of the HTTP request a call came in: go-sdk hands a tool handler
// the request's headers (mcp.RequestExtra), not its context. NewHandler's
// handler deletes it from every request it is sent.
const requestHeader = "X-Mcp-Bridge-Request"

// statelessKey ends the key of a request served without an MCP session:
// the key says so after its request ended too (a task's call runs on).
const statelessKey = "s"

// Requests are the HTTP requests NewHandler's handler serves, kept
// while they are in flight, so that the calls they carry can learn of
// them: whether a request had an MCP session (Stateless), and when it
// ends (Tie). The zero value is ready to use.
type Requests struct {
	seq atomic.Int64

	mu       sync.Mutex
	inFlight map[string]context.Context // by key: the request's context
}

// begin keeps r, served with an MCP session or without one (stateless),
// until the returned function is called, and names it in its
// requestHeader for the tool handler.
func (rs *Requests) begin(r *http.Request, stateless bool) (end func()) {
	key := strconv.FormatInt(rs.seq.Add(1), 10)
	if stateless {
		key += statelessKey
	}
	r.Header.Set(requestHeader, key)
	rs.mu.Lock()
	if rs.inFlight == nil {
		rs.inFlight = map[string]context.Context{}
	}
	rs.inFlight[key] = r.Context()
	rs.mu.Unlock()
	return func() {
		rs.mu.Lock()
		delete(rs.inFlight, key)
		rs.mu.Unlock()
	}
}

// Stateless reports whether the request extra came with was served
// without an MCP session (protocol 2026-07-28 over HTTP), where a
// sandbox lives behind a handle.
func Stateless(extra *mcp.RequestExtra) bool {
	return strings.HasSuffix(keyOf(extra), statelessKey)
}

// keyOf returns the key the handler gave the request of extra ("": none,
// a request not over HTTP).
func keyOf(extra *mcp.RequestExtra) string {
	if extra == nil || extra.Header == nil {
		return ""
	}
	return extra.Header.Get(requestHeader)
}

// Tie returns ctx, cancelled too when the HTTP request extra came with
// ends: the client went away, and with no stream to resume its answer
// can never be delivered. A request not in flight (not over HTTP, or
// ended) leaves ctx as it is.
func (rs *Requests) Tie(ctx context.Context, extra *mcp.RequestExtra) (context.Context, context.CancelFunc) {
	key := keyOf(extra)
	if key == "" {
		return ctx, func() {}
	}
	rs.mu.Lock()
	rctx, ok := rs.inFlight[key]
	rs.mu.Unlock()
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(rctx, cancel)
	return ctx, func() { stop(); cancel() }
}
