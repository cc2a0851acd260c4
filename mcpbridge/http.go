package mcpbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
)

// HTTPPath is where the bridge serves MCP over Streamable HTTP.
const HTTPPath = "/mcp"

// Defaults of HTTPOptions.
const (
	defaultSessionIdle  = 30 * time.Minute
	defaultMaxBodyBytes = 4 << 20
	defaultBodyTimeout  = 30 * time.Second
	defaultMaxSessions  = 16
)

// HTTPOptions configure the bridge's Streamable HTTP handler. The zero
// value serves loopback clients without a token.
type HTTPOptions struct {
	// Token is the bearer token every request must carry. Zero: none
	// (then serve on loopback only; see IsLoopbackAddr).
	Token string
	// AllowedHosts are Host header values (host or host:port) served
	// besides loopback names. Zero: on a loopback address only loopback
	// names (anything else is DNS rebinding), elsewhere any host.
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port]) that
	// may call besides a page of the host it calls and loopback pages
	// calling loopback. Zero: none.
	AllowedOrigins []string
	// MaxSessions bounds the MCP sessions served at once; a client
	// opening one more gets an error, the others go on. Zero: 16.
	MaxSessions int
	// SessionIdleTimeout ends a session (its sandbox and servers) after
	// this long without a request. Zero: 30 minutes; negative: never.
	SessionIdleTimeout time.Duration
	// MaxBodyBytes bounds a request's body. Zero: 4 MiB.
	MaxBodyBytes int64
	// BodyTimeout bounds reading a request's body. Zero: 30 s.
	BodyTimeout time.Duration
	// OpenProbes lets HealthPath and MetricsPath answer without the
	// token, for probes and scrapers that carry none; the Host and
	// Origin checks still apply. Zero: they need the token as HTTPPath
	// does.
	OpenProbes bool
	// ConsoleToken opens the operator's console at /console
	// (MCP_BRIDGE_CONSOLE_TOKEN, at least 32 characters, not Token).
	// Zero: no console (404).
	ConsoleToken string
	// ConsoleSecureCookie marks the console's cookie Secure without TLS
	// here: behind a proxy that terminates it. Zero: Secure under TLS.
	ConsoleSecureCookie bool
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.MaxSessions <= 0 {
		o.MaxSessions = defaultMaxSessions
	}
	if o.SessionIdleTimeout == 0 {
		o.SessionIdleTimeout = defaultSessionIdle
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = defaultBodyTimeout
	}
	return o
}

// ErrNoToken reports a non-loopback address to serve on without a token.
var ErrNoToken = errors.New("serving beyond loopback needs a bearer token (MCP_BRIDGE_HTTP_TOKEN)")

// CheckListen reports whether the bridge may serve on addr with opts:
// anywhere but loopback it takes a token.
func CheckListen(addr string, opts *HTTPOptions) error {
	if !IsLoopbackAddr(addr) && (opts == nil || opts.Token == "") {
		return fmt.Errorf("listening on %s: %w", addr, ErrNoToken)
	}
	if opts != nil && opts.ConsoleToken != "" && opts.ConsoleToken == opts.Token {
		return fmt.Errorf("serving the console: %w", console.ErrSameToken)
	}
	return nil
}

// requestHeader carries, from the HTTP layer to the tool handler, the key
// of the HTTP request a call came in.
const requestHeader = "X-Mcp-Bridge-Request"

// An httpFront is the HTTP side of a bridge: the guard, the bounds, the
// session limit in front of the go-sdk's Streamable HTTP handler.
type httpFront struct {
	b     *Bridge
	opts  HTTPOptions
	guard *httpGuard
	mcp   *mcp.StreamableHTTPHandler // 2025-11-25 and older: sessions
	// stateless serves protocol 2026-07-28 and later, which has no
	// sessions (SEP-2575): each request stands alone.
	stateless *mcp.StreamableHTTPHandler

	newMu sync.Mutex // serializes the requests that may open a session
	seq   atomic.Int64
}

// HTTPHandler returns the bridge's Streamable HTTP handler, serving MCP
// at HTTPPath: one MCP session (Mcp-Session-Id) per client, each with its
// own sandbox and servers, ended by DELETE, by SessionIdleTimeout or by
// Close. It also serves a health
// report at HealthPath and Prometheus metrics at MetricsPath (GET, HEAD),
// behind the same checks of Host, Origin and token (the token unless
// OpenProbes). With a ConsoleToken it serves the operator's console at
// console.Path, behind the Host and Origin checks and its own token.
// opts may be nil.
func (b *Bridge) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	f := &httpFront{b: b, opts: o, guard: newHTTPGuard(o.Token, o.AllowedHosts, o.AllowedOrigins)}
	idle := o.SessionIdleTimeout
	if idle < 0 {
		idle = 0 // the go-sdk's "never"
	}
	f.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.server }, &mcp.StreamableHTTPOptions{
		Logger:              b.log,
		SessionTimeout:      idle,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		// The guard protects against DNS rebinding, with the hosts
		// AllowedHosts adds; the go-sdk's own check, which knows no such
		// list, would refuse them on a loopback address (as behind a
		// reverse proxy on 127.0.0.1).
		DisableLocalhostProtection: true,
	})
	f.stateless = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.server }, &mcp.StreamableHTTPOptions{
		Logger:                     b.log,
		Stateless:                  true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		DisableLocalhostProtection: true,
	})
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, f)
	health := &healthCheck{eng: b.eng, pool: b.pool, sessions: b.sessionCount, version: b.opts.Version}
	mux.Handle(HealthPath, f.guarded(health))
	if o.ConsoleToken != "" {
		if c, err := b.newConsole(o.ConsoleToken, o.Token, o.ConsoleSecureCookie, health); err != nil {
			b.log.Error("not serving the console", "err", err)
		} else {
			// Its token is its own: the guard checks Host and Origin only.
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !f.refused(w, r, false) {
					c.ServeHTTP(w, r)
				}
			})
			mux.Handle(console.Path, h)
			mux.Handle(console.Path+"/", h)
		}
	}
	mux.Handle(MetricsPath, f.guarded(metricsHandler(b.metrics)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeHTTPError(w, http.StatusNotFound, "not found: MCP is served at "+HTTPPath)
	})
	return mux
}

// refused answers r with why the guard refuses it, if it does; the token
// is checked only when withToken is set.
func (f *httpFront) refused(w http.ResponseWriter, r *http.Request, withToken bool) bool {
	d := f.guard.check(r, withToken)
	if d == nil {
		return false
	}
	if d.challenge != "" {
		w.Header().Set("WWW-Authenticate", d.challenge)
	}
	f.b.log.Debug("HTTP request refused", "status", d.status, "why", d.msg, "remote", r.RemoteAddr)
	writeHTTPError(w, d.status, d.msg)
	return true
}

func (f *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, true) {
		return
	}
	r.Header.Del(requestHeader)
	r.Header.Del(statelessHeader)
	if r.Method == http.MethodDelete {
		// Ending a session waits for its calls: interrupt them first.
		f.b.haltCalls(r.Header.Get("Mcp-Session-Id"))
	}
	if r.Method != http.MethodPost && modernHeader(r) {
		f.stateless.ServeHTTP(w, r) // 405: no GET streams or DELETE
		return
	}
	if r.Method == http.MethodPost {
		body, ok := f.readBody(w, r)
		if !ok {
			return
		}
		key := strconv.FormatInt(f.seq.Add(1), 10)
		r.Header.Set(requestHeader, key)
		f.b.httpRequests.Store(key, r.Context())
		defer f.b.httpRequests.Delete(key)
		if modernHeader(r) || (r.Header.Get("Mcp-Session-Id") == "" && discovers(body)) {
			if modernHeader(r) && f.b.tasks.Listen(w, r, body) {
				return // a subscription to task status notifications
			}
			markStateless(r)
			f.stateless.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			// A request without a session may open one: count and open
			// one at a time, so the limit holds exactly.
			f.newMu.Lock()
			defer f.newMu.Unlock()
			if n := f.b.sessionCount(); n >= f.opts.MaxSessions {
				f.b.log.Warn("refusing a new session: the bridge serves its maximum", "sessions", n)
				w.Header().Set("Retry-After", "5")
				writeHTTPError(w, http.StatusServiceUnavailable, fmt.Sprintf(
					"the bridge serves its maximum of %d sessions (MCP_BRIDGE_MAX_SESSIONS); end one with DELETE, or try again later", f.opts.MaxSessions))
				return
			}
		}
	}
	f.mcp.ServeHTTP(w, r)
}

// readBody reads r's body, bounded in size and time, into memory, so that
// a slow or endless body fails here with a clear error and never holds a
// session or the new-session lock.
func (f *httpFront) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(f.opts.BodyTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.opts.MaxBodyBytes))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeHTTPError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", f.opts.MaxBodyBytes))
		case errors.Is(err, os.ErrDeadlineExceeded): // the read deadline above
			writeHTTPError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %v", f.opts.BodyTimeout))
		default:
			writeHTTPError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return nil, false
	}
	if !json.Valid(data) {
		writeHTTPError(w, http.StatusBadRequest, "parse error: the request body is not JSON (want a JSON-RPC message or batch)")
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	return data, true
}

// writeHTTPError writes a JSON-RPC error response (id null) with status.
func writeHTTPError(w http.ResponseWriter, status int, msg string) {
	code := -32000
	switch {
	case strings.HasPrefix(msg, "parse error"):
		code = -32700
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge:
		code = -32600 // invalid request
	case status == http.StatusNotFound:
		code = -32601
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
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

// guarded serves h behind the guard of f, for GET and HEAD only.
func (f *httpFront) guarded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.refused(w, r, !f.opts.OpenProbes) {
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeHTTPError(w, http.StatusMethodNotAllowed, "method not allowed: use GET or HEAD")
			return
		}
		h.ServeHTTP(w, r)
	})
}
