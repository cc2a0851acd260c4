package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// The local addresses a request can arrive on.
var (
	loopbackLocal = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	publicLocal   = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
)

// guardRequest returns a request to Path with host, origin and
// authorization (each omitted when empty) that arrived on local (none in
// its context when nil).
func guardRequest(local net.Addr, host, origin, authorization string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, Path, nil)
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	if local != nil {
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
	}
	return r
}

const guardToken = "0123456789abcdef-secret"

// TestHTTPGuardCheck runs whole requests through the guard: Host first,
// then Origin, then the token.
func TestHTTPGuardCheck(t *testing.T) {
	open := &Options{}
	listed := &Options{AllowedHosts: []string{" Bridge.Example.com ", "api.example:8443"}}
	origins := &Options{AllowedOrigins: []string{"HTTPS://App.Example.com/"}}
	token := &Options{Token: guardToken}
	realm := `Bearer realm="` + discovery.ImplementationName + `"`
	for _, tt := range []struct {
		name               string
		opts               *Options
		local              net.Addr
		host, origin, auth string
		status             int    // 0: let in
		msg                string // in the denial's message
		challenge          string // the denial's WWW-Authenticate
		notInMsg           string // never in the denial's message
	}{
		// Host on a loopback address: loopback names only.
		{name: "loopback IP", opts: open, local: loopbackLocal, host: "127.0.0.1:8080"},
		{name: "localhost", opts: open, local: loopbackLocal, host: "localhost:8080"},
		{name: "localhost no port", opts: open, local: loopbackLocal, host: "localhost"},
		{name: "IPv6 loopback", opts: open, local: loopbackLocal, host: "[::1]:8080"},
		{name: "sub.localhost", opts: open, local: loopbackLocal, host: "app.localhost:8080"},
		{name: "rebinding", opts: open, local: loopbackLocal, host: "evil.example:8080", status: 403, msg: `Host "evil.example:8080" is not allowed (DNS rebinding protection; MCP_BRIDGE_HTTP_ALLOWED_HOSTS`},
		{name: "no host", opts: open, local: loopbackLocal, host: "", status: 403, msg: `Host "" is not allowed`},
		{name: "long host cut short", opts: open, local: loopbackLocal, host: strings.Repeat("h", 300), status: 403, msg: `Host "` + strings.Repeat("h", 100) + `…"`},
		// Host elsewhere: any, unless a list narrows them.
		{name: "public any host", opts: open, local: publicLocal, host: "bridge.example.com"},
		{name: "no local address any host", opts: open, local: nil, host: "bridge.example.com"},
		{name: "public no host", opts: open, local: publicLocal, host: "", status: 403},
		{name: "listed host with port, listed without", opts: listed, local: loopbackLocal, host: "BRIDGE.example.com:8080"},
		{name: "listed host", opts: listed, local: publicLocal, host: "bridge.example.com"},
		{name: "listed host:port", opts: listed, local: loopbackLocal, host: "api.example:8443"},
		{name: "listed host, other port", opts: listed, local: loopbackLocal, host: "api.example:9000", status: 403},
		{name: "list narrows public", opts: listed, local: publicLocal, host: "other.example", status: 403},
		{name: "list keeps loopback", opts: listed, local: publicLocal, host: "localhost:8080"},
		// Origin.
		{name: "no origin", opts: open, local: loopbackLocal, host: "127.0.0.1:8080"},
		{name: "origin null", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "null", status: 403, msg: `Origin "null" is not allowed (MCP_BRIDGE_HTTP_ALLOWED_ORIGINS`},
		{name: "file page", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "file://", status: 403},
		{name: "same origin", opts: open, local: publicLocal, host: "bridge.example.com:8443", origin: "https://Bridge.Example.com:8443"},
		{name: "same host other port", opts: open, local: publicLocal, host: "bridge.example.com:8443", origin: "https://bridge.example.com:9999", status: 403},
		{name: "loopback page to loopback", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "http://localhost:3000"},
		{name: "loopback page to public host", opts: open, local: publicLocal, host: "bridge.example.com", origin: "http://localhost:3000", status: 403},
		{name: "listed origin", opts: origins, local: publicLocal, host: "bridge.example.com", origin: "https://app.example.com"},
		{name: "listed origin, other scheme", opts: origins, local: publicLocal, host: "bridge.example.com", origin: "http://app.example.com", status: 403},
		{name: "foreign origin", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "https://evil.example", status: 403, msg: `Origin "https://evil.example"`},
		{name: "origin with a path", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080/page", status: 403},
		{name: "origin with a user", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "http://u@127.0.0.1:8080", status: 403},
		{name: "garbage origin", opts: open, local: loopbackLocal, host: "127.0.0.1:8080", origin: "%%%", status: 403},
		// The token, after Host and Origin.
		{name: "token missing", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", status: 401, msg: "missing bearer token: send Authorization: Bearer <MCP_BRIDGE_HTTP_TOKEN>", challenge: realm},
		{name: "token wrong", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "Bearer " + guardToken + "x", status: 401, msg: "invalid bearer token", challenge: realm + `, error="invalid_token"`, notInMsg: guardToken},
		{name: "token prefix", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "Bearer " + guardToken[:16], status: 401, challenge: realm + `, error="invalid_token"`},
		{name: "token right", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "Bearer " + guardToken},
		{name: "token lower-case scheme", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "bearer " + guardToken},
		{name: "token extra spaces", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "  Bearer    " + guardToken + "  "},
		{name: "token other scheme", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "Basic " + guardToken, status: 401, challenge: realm},
		{name: "token empty", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", auth: "Bearer ", status: 401, challenge: realm},
		{name: "host before token", opts: token, local: loopbackLocal, host: "evil.example", status: 403},
		{name: "origin before token", opts: token, local: loopbackLocal, host: "127.0.0.1:8080", origin: "https://evil.example", status: 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := guardOf(tt.opts)
			d, _ := g.check(guardRequest(tt.local, tt.host, tt.origin, tt.auth), true)
			if tt.status == 0 {
				if d != nil {
					t.Fatalf("refused (%d %q), want let in", d.status, d.msg)
				}
				return
			}
			if d == nil {
				t.Fatalf("let in, want %d", tt.status)
			}
			if d.status != tt.status || !strings.Contains(d.msg, tt.msg) || d.challenge != tt.challenge ||
				tt.notInMsg != "" && strings.Contains(d.msg, tt.notInMsg) {
				t.Fatalf("denial %d %q, challenge %q; want %d ~%q, challenge %q", d.status, d.msg, d.challenge, tt.status, tt.msg, tt.challenge)
			}
		})
	}
}

func TestHTTPGuardHostAllowed(t *testing.T) {
	listed := guardOf(&Options{AllowedHosts: []string{"Bridge.Example.com", "api.example:8443"}})
	open := guardOf(&Options{})
	for _, tt := range []struct {
		g             *guard
		host          string
		localLoopback bool
		want          bool
	}{
		{open, "", false, false},
		{open, "", true, false},
		{open, "127.0.0.1", true, true},
		{open, "127.9.9.9:1", true, true},
		{open, "[::1]:8080", true, true},
		{open, "::1", true, true},
		{open, "[::ffff:127.0.0.1]:80", true, true},
		{open, "LOCALHOST.:8080", true, true},
		{open, "a.b.localhost", true, true},
		{open, "localhost.evil.example", true, false},
		{open, "10.0.0.1:8080", true, false},
		{open, "bridge.example.com", true, false},
		{open, "bridge.example.com", false, true},
		{listed, "bridge.example.com", true, true},
		{listed, "bridge.example.com:1234", true, true},
		{listed, "api.example:8443", true, true},
		{listed, "API.EXAMPLE:8443", false, true},
		{listed, "api.example", true, false},
		{listed, "api.example:8444", false, false},
		{listed, "other.example", false, false},
		{listed, "localhost:1", false, true},
	} {
		if got := tt.g.hostAllowed(tt.host, tt.localLoopback); got != tt.want {
			t.Errorf("hostAllowed(%q, loopback %v) with %v = %v, want %v", tt.host, tt.localLoopback, tt.g.allowedHosts, got, tt.want)
		}
	}
}

func TestHTTPGuardOriginAllowed(t *testing.T) {
	g := guardOf(&Options{AllowedOrigins: []string{" https://App.Example.com/ ", "http://tool.example:3000"}})
	for _, tt := range []struct {
		origin, host string
		want         bool
	}{
		{"null", "127.0.0.1:8080", false},
		{"file://", "127.0.0.1:8080", false},
		{"file:///home/u/page.html", "127.0.0.1:8080", false},
		{"chrome-extension://abcdef", "127.0.0.1:8080", false},
		{"garbage", "127.0.0.1:8080", false},
		{"http://", "127.0.0.1:8080", false},
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"http://localhost:5173", "127.0.0.1:8080", true},
		{"http://[::1]:5173", "localhost:8080", true},
		{"http://localhost:5173", "bridge.example.com", false},
		{"http://bridge.example.com", "localhost:8080", false},
		{"https://bridge.example.com", "bridge.example.com", true},
		{"https://BRIDGE.example.com/", "bridge.example.com", true},
		{"https://bridge.example.com:8443", "bridge.example.com", false},
		{"https://app.example.com", "bridge.example.com", true},
		{"https://app.example.com/", "bridge.example.com", true},
		{"http://tool.example:3000", "bridge.example.com", true},
		{"http://tool.example", "bridge.example.com", false},
		{"https://evil.example", "bridge.example.com", false},
		{"https://u:p@bridge.example.com", "bridge.example.com", false},
		{"https://bridge.example.com/path", "bridge.example.com", false},
	} {
		if got := g.originAllowed(tt.origin, tt.host); got != tt.want {
			t.Errorf("originAllowed(%q, %q) = %v, want %v", tt.origin, tt.host, got, tt.want)
		}
	}
}

func TestHTTPGuardBearer(t *testing.T) {
	for _, tt := range []struct {
		header, token string
		ok            bool
	}{
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer tok", "tok", true},
		{"bearer tok", "tok", true},
		{"BEARER tok", "tok", true},
		{"  Bearer    tok  ", "tok", true},
		{"Bearer\ttok", "", false},
		{"Bearer tok en", "", false},
		{"Bearer tok\ten", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Bearertok", "", false},
		{"Token tok", "", false},
	} {
		token, ok := bearer(tt.header)
		if token != tt.token || ok != tt.ok {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", tt.header, token, ok, tt.token, tt.ok)
		}
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.1.2.3:1", true},
		{"localhost:8080", true},
		{"LocalHost:8080", true},
		{"localhost.:8080", true},
		{"app.localhost:8080", true},
		{"[::1]:8080", true},
		{"[::ffff:127.0.0.1]:80", true},
		{"::1", true},
		{"127.0.0.1", true},
		{":8080", false},
		{"", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"192.168.1.2:80", false},
		{"bridge.example.com:80", false},
		{"localhost.example.com:80", false},
	} {
		if got := IsLoopbackAddr(tt.addr); got != tt.want {
			t.Errorf("IsLoopbackAddr(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	for _, tt := range []struct {
		addr    string
		opts    *Options
		wantErr bool
	}{
		{"127.0.0.1:8080", nil, false},
		{"localhost:0", &Options{}, false},
		{"[::1]:8080", &Options{}, false},
		{":8080", nil, true},
		{":8080", &Options{}, true},
		{"0.0.0.0:8080", &Options{AllowedHosts: []string{"bridge.example.com"}}, true},
		{"0.0.0.0:8080", &Options{Token: guardToken}, false},
		{"192.0.2.10:443", &Options{Token: guardToken}, false},
	} {
		err := CheckListen(tt.addr, tt.opts)
		if (err != nil) != tt.wantErr {
			t.Errorf("CheckListen(%q, %+v) = %v; want error %v", tt.addr, tt.opts, err, tt.wantErr)
			continue
		}
		if err != nil && (!errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), tt.addr) || !strings.Contains(err.Error(), "MCP_BRIDGE_HTTP_TOKEN")) {
			t.Errorf("CheckListen(%q): error %q does not wrap ErrNoToken and name the address and MCP_BRIDGE_HTTP_TOKEN", tt.addr, err)
		}
	}
}

// guardOf is the guard NewHandler builds of o.
func guardOf(o *Options) *guard {
	return newGuard(o.Token, o.AllowedHosts, o.AllowedOrigins)
}
