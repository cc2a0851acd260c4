package httpserve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// A guard decides, before the MCP handler sees a request, whether
// its Host, Origin and credentials let it in.
type guard struct {
	token          [sha256.Size]byte // the digest of the bearer token
	hasToken       bool
	allowedHosts   []string // lower-case host or host:port
	allowedOrigins []string // lower-case scheme://host[:port]
}

// newGuard returns the guard of a bearer token (none when empty) and of
// the hosts and origins let in besides the defaults (Options.Token,
// AllowedHosts and AllowedOrigins).
func newGuard(token string, hosts, origins []string) *guard {
	g := &guard{}
	if token != "" {
		g.token, g.hasToken = sha256.Sum256([]byte(token)), true
	}
	for _, h := range hosts {
		g.allowedHosts = append(g.allowedHosts, strings.ToLower(strings.TrimSpace(h)))
	}
	for _, o := range origins {
		g.allowedOrigins = append(g.allowedOrigins, strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/")))
	}
	return g
}

// A denial is why a request is refused: its HTTP status and a message.
type denial struct {
	status int
	msg    string
	// challenge is the WWW-Authenticate value of a 401.
	challenge string
}

// check returns why r may not go on, or nil; the token is checked only
// when withToken is set.
func (g *guard) check(r *http.Request, withToken bool) *denial {
	localLoopback := false
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
		localLoopback = isLoopbackHost(hostOnly(a.String()))
	}
	if !g.hostAllowed(r.Host, localLoopback) {
		return &denial{status: http.StatusForbidden, msg: "Host " + quoteHeader(r.Host) + " is not allowed (DNS rebinding protection; MCP_BRIDGE_HTTP_ALLOWED_HOSTS lists more)"}
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, r.Host) {
		return &denial{status: http.StatusForbidden, msg: "Origin " + quoteHeader(origin) + " is not allowed (MCP_BRIDGE_HTTP_ALLOWED_ORIGINS lists more)"}
	}
	if g.hasToken && withToken {
		given, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			return &denial{status: http.StatusUnauthorized, msg: "missing bearer token: send Authorization: Bearer <MCP_BRIDGE_HTTP_TOKEN>",
				challenge: `Bearer realm="` + discovery.ImplementationName + `"`}
		}
		digest := sha256.Sum256([]byte(given))
		if subtle.ConstantTimeCompare(digest[:], g.token[:]) != 1 {
			return &denial{status: http.StatusUnauthorized, msg: "invalid bearer token",
				challenge: `Bearer realm="` + discovery.ImplementationName + `", error="invalid_token"`}
		}
	}
	return nil
}

// hostAllowed reports whether a request naming host may be served: a
// loopback name always; a listed host; any other only when the bridge
// does not serve on loopback (where a foreign name means DNS rebinding)
// and no list narrows the hosts.
func (g *guard) hostAllowed(host string, localLoopback bool) bool {
	if host == "" {
		return false
	}
	name := hostOnly(host)
	if isLoopbackHost(name) {
		return true
	}
	h := strings.ToLower(host)
	if slices.Contains(g.allowedHosts, h) || slices.Contains(g.allowedHosts, strings.ToLower(name)) {
		return true
	}
	return !localLoopback && len(g.allowedHosts) == 0
}

// originAllowed reports whether a browser page of origin may call: a
// listed origin; a loopback page calling a loopback host; a page of the
// very host it calls.
func (g *guard) originAllowed(origin, host string) bool {
	o := strings.ToLower(strings.TrimRight(origin, "/"))
	if slices.Contains(g.allowedOrigins, o) {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false // "null", a file page, garbage
	}
	if isLoopbackHost(u.Hostname()) && isLoopbackHost(hostOnly(host)) {
		return true
	}
	return strings.EqualFold(u.Host, host)
}

// bearer returns the token of an Authorization header value.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// hostOnly returns the host of host[:port], without brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isLoopbackHost reports whether host names this machine's loopback.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// IsLoopbackAddr reports whether the listen address addr (host:port) is
// on loopback only; an empty host (every interface) is not.
func IsLoopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		h = addr
	}
	return h != "" && isLoopbackHost(h)
}

// quoteHeader quotes a header value for an error message, cut short.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(v, "?") + `"`
}
