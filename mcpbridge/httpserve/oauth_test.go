package httpserve

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// A loopIssuer is an authorization server on loopback that signs access
// tokens with one RSA key.
type loopIssuer struct {
	*httptest.Server
	key *rsa.PrivateKey
}

func newLoopIssuer(t *testing.T) *loopIssuer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &loopIssuer{key: k}
	is.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "jwks_uri": is.URL + "/keys"})
		case "/keys":
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(is.Close)
	return is
}

// token returns an access token for sub with scope, for resource.
func (is *loopIssuer) token(t *testing.T, resource, sub, scope string) string {
	sig, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k"))
	s, err := jwt.Signed(sig).Claims(map[string]any{"iss": is.URL, "sub": sub, "aud": resource, "scope": scope,
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	base  http.RoundTripper
	token string
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// TestOAuthResourceServer: with an authorization server, the handler
// serves the resource's metadata to anyone, answers a request without a
// token, with a bad one and with one lacking the scope as the MCP
// authorization specification says, lets a valid token's caller in with
// its identity in the request (TokenInfo), and the shared token as its
// fixed identity.
func TestOAuthResourceServer(t *testing.T) {
	is := newLoopIssuer(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		id := IdentityOf(req.Extra)
		text := "nobody"
		if id != nil {
			text = id.Issuer + "|" + id.Subject
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	resource := srv.URL + Path
	v, err := oauth.New(&oauth.Options{Issuer: is.URL, Resource: resource, Scopes: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = NewHandler(Config{Server: server, Bridge: stubBridge{server}, Health: http.NotFoundHandler(),
		Metrics: http.NotFoundHandler(), Logger: slog.New(slog.DiscardHandler)}, &Options{OAuth: v, Token: strings.Repeat("s", 32)})

	metaURL := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	for _, u := range []string{metaURL, srv.URL + "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != 200 || m["resource"] != resource || m["authorization_servers"].([]any)[0] != is.URL {
			t.Errorf("%s: %d %v", u, resp.StatusCode, m)
		}
	}
	post := func(token string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
	}
	meta := `resource_metadata="` + metaURL + `"`
	for _, tt := range []struct {
		name, token string
		status      int
		challenge   string
	}{
		{"no token", "", 401, "Bearer " + meta + `, scope="mcp"`},
		{"a bad token", "garbage", 401, "Bearer " + meta + `, error="invalid_token", scope="mcp"`},
		{"another resource's token", is.token(t, "https://other.example.com/mcp", "alice", "mcp"), 401, "Bearer " + meta + `, error="invalid_token", scope="mcp"`},
		{"no scope", is.token(t, resource, "alice", "openid"), 403, "Bearer " + meta + `, error="insufficient_scope", scope="mcp"`},
	} {
		status, challenge, body := post(tt.token)
		if status != tt.status || challenge != tt.challenge || !strings.Contains(body, is.URL) {
			t.Errorf("%s: %d %q %s", tt.name, status, challenge, body)
		}
	}

	whoami := func(token string) string {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: resource, MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearerTransport{http.DefaultTransport, token}}}, nil)
		if err != nil {
			t.Fatalf("connecting: %v", err)
		}
		defer cs.Close()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := whoami(is.token(t, resource, "alice", "mcp openid")); got != is.URL+"|alice" {
		t.Errorf("alice is %q", got)
	}
	if got := whoami(strings.Repeat("s", 32)); got != "|shared-token" {
		t.Errorf("the shared token is %q", got)
	}
}
