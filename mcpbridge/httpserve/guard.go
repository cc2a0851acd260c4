package httpserve

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// A guard decides, before the MCP handler sees a request, whether
// its Host, Origin and credentials let it in.
type guard struct {
	token          [sha256.Size]byte // the digest of the bearer token
	hasToken       bool
	allowedHosts   []string        // lower-case host or host:port
	allowedOrigins []string        // lower-case scheme://host[:port]
	oauth          *oauth.Verifier // nil: the shared token only
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

// check returns why r may not go on, or nil and who is calling (nil
// without OAuth, or when the token is not checked); the token is checked
// only when withToken is set.
func (g *guard) check(r *http.Request, withToken bool) (*denial, *oauth.Identity) {
	localLoopback := false
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
		localLoopback = isLoopbackHost(hostOnly(a.String()))
	}
	if !g.hostAllowed(r.Host, localLoopback) {
		return &denial{status: http.StatusForbidden, msg: "Host " + quoteHeader(r.Host) + " is not allowed (DNS rebinding protection; MCP_BRIDGE_HTTP_ALLOWED_HOSTS lists more)"}, nil
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, r.Host) {
		return &denial{status: http.StatusForbidden, msg: "Origin " + quoteHeader(origin) + " is not allowed (MCP_BRIDGE_HTTP_ALLOWED_ORIGINS lists more)"}, nil
	}
	if g.oauth != nil && withToken {
		return g.checkOAuth(r)
	}
	if g.hasToken && withToken {
		given, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			return &denial{status: http.StatusUnauthorized, msg: "missing bearer token: send Authorization: Bearer <MCP_BRIDGE_HTTP_TOKEN>",
				challenge: `Bearer realm="` + discovery.ImplementationName + `"`}, nil
		}
		if !g.shared(given) {
			return &denial{status: http.StatusUnauthorized, msg: "invalid bearer token",
				challenge: `Bearer realm="` + discovery.ImplementationName + `", error="invalid_token"`}, nil
		}
	}
	return nil, nil
}

// shared reports whether token is the shared bearer token.
func (g *guard) shared(token string) bool {
	digest := sha256.Sum256([]byte(token))
	return g.hasToken && subtle.ConstantTimeCompare(digest[:], g.token[:]) == 1
}

// checkOAuth checks r's access token: the shared token is the one fixed
// identity SharedIdentity; any other is verified by the authorization
// server's keys. A refusal is the specification's: 401 naming the
// resource metadata (error="invalid_token" when a token was sent), 403
// insufficient_scope, 503 while the issuer's keys are unavailable.
func (g *guard) checkOAuth(r *http.Request) (*denial, *oauth.Identity) {
	given, ok := bearer(r.Header.Get("Authorization"))
	if ok && g.shared(given) {
		return nil, SharedIdentity
	}
	var err error
	var id *oauth.Identity
	if ok {
		id, err = g.oauth.Verify(r.Context(), given)
	} else {
		err = fmt.Errorf("%w: none was sent", oauth.ErrInvalidToken)
	}
	if err == nil {
		return nil, id
	}
	status, challenge := g.oauth.Challenge(err, ok)
	msg := "unauthorized: " + err.Error() + "; get an access token from " + g.oauth.Options().Issuer + " for " + g.oauth.Options().Resource
	if status == http.StatusServiceUnavailable {
		msg = "the bridge cannot verify access tokens now: " + err.Error()
	}
	return &denial{status: status, msg: msg, challenge: challenge}, nil
}

// SharedIdentity is the caller of the shared bearer token when OAuth is
// on too: one fixed identity, with the default limits.
var SharedIdentity = &oauth.Identity{Issuer: "", Subject: "shared-token"}

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
