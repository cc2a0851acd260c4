// Package httpserve is the bridge's HTTP side: Streamable HTTP at Path
// behind a guard (Host, Origin, bearer token), the request body read
// bounded in size and time, the session limit, and the two go-sdk
// handlers a request goes to (with sessions, or without: protocol
// 2026-07-28); the health report, the metrics and the operator's console
// behind the same guard. The bridge implements Bridge, and learns of the
// HTTP request a call came in through Requests.
package httpserve

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// Paths NewHandler serves.
const (
	// Path is where MCP is served over Streamable HTTP.
	Path = "/mcp"
	// HealthPath and MetricsPath are the health report's and the
	// Prometheus metrics'.
	HealthPath  = "/healthz"
	MetricsPath = "/metrics"
)

// Defaults of Options.
const (
	defaultSessionIdle  = 30 * time.Minute
	defaultMaxBodyBytes = 4 << 20
	defaultBodyTimeout  = 30 * time.Second
	defaultMaxSessions  = 16
)

// Options configure the bridge's Streamable HTTP handler. The zero
// value serves loopback clients without a token.
type Options struct {
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
	// Origin checks still apply. Zero: they need the token as Path
	// does.
	OpenProbes bool
	// ConsoleToken opens the operator's console at /console
	// (MCP_BRIDGE_CONSOLE_TOKEN, at least 32 characters, not Token).
	// Zero: no console (404).
	ConsoleToken string
	// ConsoleSecureCookie marks the console's cookie Secure without TLS
	// here: behind a proxy that terminates it. Zero: Secure under TLS.
	ConsoleSecureCookie bool
	// OAuth makes Path a resource server of its authorization server
	// (MCP_BRIDGE_OAUTH_ISSUER): a bearer token other than Token is an
	// access token it verifies, whose (issuer, subject) is the caller;
	// its Protected Resource Metadata is served, and a request without a
	// valid token is answered as the MCP authorization specification
	// says. Token, when set too, stays one fixed identity. Zero: Token
	// only.
	OAuth *oauth.Verifier
}

func (o Options) withDefaults() Options {
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
var ErrNoToken = errors.New("serving beyond loopback needs a bearer token (MCP_BRIDGE_HTTP_TOKEN) or an authorization server (MCP_BRIDGE_OAUTH_ISSUER)")

// CheckListen reports whether the bridge may serve on addr with opts:
// anywhere but loopback it takes a token or an authorization server.
func CheckListen(addr string, opts *Options) error {
	if !IsLoopbackAddr(addr) && (opts == nil || (opts.Token == "" && opts.OAuth == nil)) {
		return fmt.Errorf("listening on %s: %w", addr, ErrNoToken)
	}
	if opts != nil && opts.ConsoleToken != "" && opts.ConsoleToken == opts.Token {
		return fmt.Errorf("serving the console: %w", console.ErrSameToken)
	}
	return nil
}
