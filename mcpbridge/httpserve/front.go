package httpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/protocol"
)

// A Bridge is what the handler asks of the bridge it serves: the bridge
// implements it.
type Bridge interface {
	// Sessions returns how many MCP sessions the server has.
	Sessions() int
	// HaltCalls interrupts the calls of the MCP session whose
	// Mcp-Session-Id is id, which is ending (closing it waits for its
	// calls in flight).
	HaltCalls(id string)
	// ListenTasks serves a subscriptions/listen request (body) naming
	// tasks, and reports whether it did.
	ListenTasks(w http.ResponseWriter, r *http.Request, body []byte) bool
}

// A Config is what the handler serves.
type Config struct {
	// Server is the MCP server, served at Path.
	Server *mcp.Server
	// Bridge is the bridge Server is the MCP server of.
	Bridge Bridge
	// Requests keeps the requests in flight for the calls they carry.
	// Nil: a registry of the handler's own, which no call reads.
	Requests *Requests
	// Health and Metrics serve HealthPath and MetricsPath (GET, HEAD).
	Health, Metrics http.Handler
	// Console serves the operator's console at console.Path, behind the
	// Host and Origin checks and its own token. Zero: no console (404).
	Console http.Handler
	// Logger receives the refusals. Nil: they are not logged.
	Logger *slog.Logger
}

// A front is the HTTP side of a bridge: the guard, the bounds, the
// session limit in front of the go-sdk's Streamable HTTP handler.
type front struct {
	opts     Options
	bridge   Bridge
	requests *Requests
	log      *slog.Logger
	guard    *guard
	mcp      *mcp.StreamableHTTPHandler // 2025-11-25 and older: sessions
	// stateless serves protocol 2026-07-28 and later, which has no
	// sessions (SEP-2575): each request stands alone.
	stateless *mcp.StreamableHTTPHandler
	// identified serves the requests of a caller the guard verified
	// (OAuth on).
	identified http.Handler

	newMu sync.Mutex // serializes the requests that may open a session
}

// NewHandler returns the Streamable HTTP handler of c, serving MCP at
// Path: one MCP session (Mcp-Session-Id) per client, each with its own
// sandbox and servers, ended by DELETE, by SessionIdleTimeout or by the
// server's end. It also serves c.Health at HealthPath and c.Metrics at
// MetricsPath (GET, HEAD), behind the same checks of Host, Origin and
// token (the token unless OpenProbes), and c.Console, if any, at
// console.Path, behind the Host and Origin checks. opts may be nil.
func NewHandler(c Config, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	if c.Requests == nil {
		c.Requests = &Requests{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	f := &front{opts: o, bridge: c.Bridge, requests: c.Requests, log: c.Logger, guard: newGuard(o.Token, o.AllowedHosts, o.AllowedOrigins)}
	f.guard.oauth = o.OAuth
	f.identified = identifiedHandler(http.HandlerFunc(f.serve))
	idle := o.SessionIdleTimeout
	if idle < 0 {
		idle = 0 // the go-sdk's "never"
	}
	f.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return c.Server }, &mcp.StreamableHTTPOptions{
		Logger:              c.Logger,
		SessionTimeout:      idle,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		// The guard protects against DNS rebinding, with the hosts
		// AllowedHosts adds; the go-sdk's own check, which knows no such
		// list, would refuse them on a loopback address (as behind a
		// reverse proxy on 127.0.0.1).
		DisableLocalhostProtection: true,
	})
	f.stateless = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return c.Server }, &mcp.StreamableHTTPOptions{
		Logger:                     c.Logger,
		Stateless:                  true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		DisableLocalhostProtection: true,
	})
	mux := http.NewServeMux()
	mux.Handle(Path, f)
	mux.Handle(HealthPath, f.guarded(c.Health))
	if c.Console != nil {
		// Its token is its own: the guard checks Host and Origin only.
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !f.refused(w, r, false) {
				c.Console.ServeHTTP(w, r)
			}
		})
		mux.Handle(console.Path, h)
		mux.Handle(console.Path+"/", h)
	}
	mux.Handle(MetricsPath, f.guarded(c.Metrics))
	if o.OAuth != nil {
		// The resource's metadata: public, under the Host and Origin checks.
		meta := auth.ProtectedResourceMetadataHandler(o.OAuth.Metadata())
		for _, p := range o.OAuth.MetadataPaths() {
			mux.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !f.refused(w, r, false) {
					meta.ServeHTTP(w, r)
				}
			}))
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found: MCP is served at "+Path)
	})
	return mux
}

// refused answers r with why the guard refuses it, if it does; the token
// is checked only when withToken is set.
func (f *front) refused(w http.ResponseWriter, r *http.Request, withToken bool) bool {
	d, _ := f.guard.check(r, withToken)
	if d == nil {
		return false
	}
	f.refuse(w, r, d)
	return true
}

// refuse answers r with d.
func (f *front) refuse(w http.ResponseWriter, r *http.Request, d *denial) {
	if d.challenge != "" {
		w.Header().Set("WWW-Authenticate", d.challenge)
	}
	f.log.Debug("HTTP request refused", "status", d.status, "why", d.msg, "remote", r.RemoteAddr)
	if d.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "10")
	}
	writeError(w, d.status, d.msg)
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, id := f.guard.check(r, true)
	if d != nil {
		f.refuse(w, r, d)
		return
	}
	if id != nil {
		// The caller, for the go-sdk (RequestExtra.TokenInfo: a session
		// stays its caller's) and the bridge.
		r = r.WithContext(withIdentity(r.Context(), id))
		f.identified.ServeHTTP(w, r)
		return
	}
	f.serve(w, r)
}

// serve serves r, its caller checked.
func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(requestHeader)
	if r.Method == http.MethodDelete {
		// Ending a session waits for its calls: interrupt them first.
		f.bridge.HaltCalls(r.Header.Get("Mcp-Session-Id"))
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
		stateless := modernHeader(r) || (r.Header.Get("Mcp-Session-Id") == "" && discovers(body))
		defer f.requests.begin(r, stateless)()
		if stateless {
			if modernHeader(r) && f.bridge.ListenTasks(w, r, body) {
				return // a subscription to task status notifications
			}
			f.stateless.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			// A request without a session may open one: count and open
			// one at a time, so the limit holds exactly.
			f.newMu.Lock()
			defer f.newMu.Unlock()
			if n := f.bridge.Sessions(); n >= f.opts.MaxSessions {
				f.log.Warn("refusing a new session: the bridge serves its maximum", "sessions", n)
				w.Header().Set("Retry-After", "5")
				writeError(w, http.StatusServiceUnavailable, fmt.Sprintf(
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
func (f *front) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(f.opts.BodyTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.opts.MaxBodyBytes))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", f.opts.MaxBodyBytes))
		case errors.Is(err, os.ErrDeadlineExceeded): // the read deadline above
			writeError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %v", f.opts.BodyTimeout))
		default:
			writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return nil, false
	}
	if !json.Valid(data) {
		writeError(w, http.StatusBadRequest, "parse error: the request body is not JSON (want a JSON-RPC message or batch)")
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	return data, true
}

// writeError writes a JSON-RPC error response (id null) with status.
func writeError(w http.ResponseWriter, status int, msg string) {
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

// guarded serves h behind the guard of f, for GET and HEAD only.
func (f *front) guarded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.refused(w, r, !f.opts.OpenProbes) {
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method not allowed: use GET or HEAD")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// modernHeader reports whether r names, in its MCP-Protocol-Version
// header, a protocol version without sessions (protocol.Stateless or a
// later one, which the stateless handler refuses with the versions it
// supports). Versions are dates, so they compare as strings.
func modernHeader(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get("Mcp-Protocol-Version"))
	return v >= protocol.Stateless
}

// discovers reports whether body, a JSON-RPC message or batch, holds a
// server/discover request: a client probing for the protocol without
// sessions, which it sends before it knows the version to name (and
// without a session ID, which is when the caller asks).
func discovers(body []byte) bool {
	if !bytes.Contains(body, []byte(`server/discover`)) {
		return false // the common case, without decoding the body again
	}
	type message struct {
		Method string `json:"method"`
	}
	var one message
	if json.Unmarshal(body, &one) == nil {
		return one.Method == "server/discover"
	}
	var batch []message
	if json.Unmarshal(body, &batch) != nil {
		return false
	}
	for _, m := range batch {
		if m.Method == "server/discover" {
			return true
		}
	}
	return false
}
