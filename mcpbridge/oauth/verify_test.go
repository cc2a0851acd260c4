package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// A testIssuer is an authorization server on loopback: its metadata, a
// key set it can rotate, and an introspection endpoint; it counts the
// fetches of its keys and can go down.
type testIssuer struct {
	*httptest.Server
	mu         sync.Mutex
	keys       []*rsa.PrivateKey
	kids       []string
	keyFetches atomic.Int32
	down       atomic.Bool
	active     map[string]introspection // opaque token → answer
}

func newTestIssuer(t *testing.T) *testIssuer {
	is := &testIssuer{active: map[string]introspection{}}
	is.rotate(t)
	is.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if is.down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "jwks_uri": is.URL + "/keys", "introspection_endpoint": is.URL + "/introspect"})
		case "/keys":
			is.keyFetches.Add(1)
			is.mu.Lock()
			var set jose.JSONWebKeySet
			for i, k := range is.keys {
				set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: is.kids[i], Algorithm: "RS256", Use: "sig"})
			}
			is.mu.Unlock()
			json.NewEncoder(w).Encode(set)
		case "/introspect":
			if id, secret, _ := r.BasicAuth(); id != "bridge" || secret != "s3cret" {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			r.ParseForm()
			is.mu.Lock()
			a := is.active[r.Form.Get("token")]
			is.mu.Unlock()
			json.NewEncoder(w).Encode(a)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(is.Close)
	return is
}

// rotate adds a new key, which signs from now on.
func (is *testIssuer) rotate(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys = append(is.keys, k)
	is.kids = append(is.kids, "k"+string(rune('0'+len(is.kids))))
	is.mu.Unlock()
}

// token signs claims with the newest key, typ typ.
func (is *testIssuer) token(t *testing.T, typ string, claims map[string]any) string {
	is.mu.Lock()
	k, kid := is.keys[len(is.keys)-1], is.kids[len(is.kids)-1]
	is.mu.Unlock()
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", kid)
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const resource = "https://mcp.example.com/mcp"

// claims returns a valid access token's claims for sub, changed by more.
func (is *testIssuer) claims(sub string, more map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": is.URL, "sub": sub, "aud": resource, "exp": now.Add(time.Hour).Unix(),
		"iat": now.Unix(), "scope": "mcp openid", "client_id": "cli"}
	for k, v := range more {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// TestVerify: a valid access token gives its (issuer, subject); every
// hostile token is refused as invalid_token with why.
func TestVerify(t *testing.T) {
	is := newTestIssuer(t)
	v, err := New(&Options{Issuer: is.URL, Resource: resource, Scopes: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := v.Verify(ctx, is.token(t, "at+jwt", is.claims("alice", nil)))
	if err != nil || id.Issuer != is.URL || id.Subject != "alice" || strings.Join(id.Scopes, " ") != "mcp openid" || id.ClientID != "cli" {
		t.Fatalf("a valid token: %+v %v", id, err)
	}
	if _, err := v.Verify(ctx, is.token(t, "application/at+jwt", is.claims("bob", map[string]any{"scope": nil, "scp": []string{"mcp"}}))); err != nil {
		t.Errorf("typ application/at+jwt, scp as a list: %v", err)
	}

	pemKey, _ := x509.MarshalPKIXPublicKey(&is.keys[0].PublicKey)
	hsSigner, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pemKey})},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k0"))
	hs, _ := jwt.Signed(hsSigner).Claims(is.claims("mallory", nil)).Serialize()
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	payload, _ := json.Marshal(is.claims("mallory", nil))
	none := b64(`{"alg":"none","typ":"at+jwt"}`) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	valid := is.token(t, "at+jwt", is.claims("alice", nil))
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]

	for _, tt := range []struct{ name, token, why string }{
		{"expired", is.token(t, "at+jwt", is.claims("alice", map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})), "expired"},
		{"not yet valid", is.token(t, "at+jwt", is.claims("alice", map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "not valid yet"},
		{"no exp", is.token(t, "at+jwt", is.claims("alice", map[string]any{"exp": nil})), "no exp"},
		{"no sub", is.token(t, "at+jwt", is.claims("", nil)), "no sub"},
		{"wrong audience", is.token(t, "at+jwt", is.claims("alice", map[string]any{"aud": "cli"})), "audience"},
		{"another resource", is.token(t, "at+jwt", is.claims("alice", map[string]any{"aud": "https://other.example.com/mcp"})), "audience"},
		{"wrong issuer", is.token(t, "at+jwt", is.claims("alice", map[string]any{"iss": "https://evil.example.com"})), "issuer"},
		{"an ID token", is.token(t, "JWT", is.claims("alice", nil)), `typ "JWT"`},
		{"no typ", is.token(t, "", is.claims("alice", nil)), `typ ""`},
		{"alg none", none, "unexpected signature algorithm"},
		{"HS256 signed with the public key", hs, "unexpected signature algorithm"},
		{"a changed payload", tampered, "does not verify"},
		{"garbage", "a.b.c", "invalid token"},
		{"opaque without introspection", "opaque-token", "not a JWT"},
	} {
		_, err := v.Verify(ctx, tt.token)
		if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("%s: %v, want invalid_token saying %q", tt.name, err, tt.why)
		}
	}
	_, err = v.Verify(ctx, is.token(t, "at+jwt", is.claims("alice", map[string]any{"scope": "openid"})))
	if !errors.Is(err, ErrInsufficientScope) || !strings.Contains(err.Error(), `"mcp"`) {
		t.Errorf("a token without the scope: %v", err)
	}
	if n := is.keyFetches.Load(); n != 1 {
		t.Errorf("the keys were fetched %d times, want once", n)
	}
}

// TestKeys: a token of a key the verifier does not know makes it fetch
// the keys again (a rotation), at most once per KeysRefresh; while the
// issuer is down the keys had keep verifying; with none ever had, every
// token is ErrUnavailable.
func TestKeys(t *testing.T) {
	is := newTestIssuer(t)
	now := time.Now()
	clock := func() time.Time { return now }
	v, _ := New(&Options{Issuer: is.URL, Resource: resource, Now: clock})
	ctx := context.Background()
	old := is.token(t, "at+jwt", is.claims("alice", nil))
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}
	is.rotate(t)
	rotated := is.token(t, "at+jwt", is.claims("alice", nil))
	if _, err := v.Verify(ctx, rotated); !errors.Is(err, ErrInvalidToken) || is.keyFetches.Load() != 1 {
		t.Fatalf("a new key within KeysRefresh of the last fetch: %v (%d fetches)", err, is.keyFetches.Load())
	}
	now = now.Add(defaultKeysRefresh)
	if _, err := v.Verify(ctx, rotated); err != nil || is.keyFetches.Load() != 2 {
		t.Fatalf("after a rotation: %v (%d fetches)", err, is.keyFetches.Load())
	}
	for range 5 {
		forged := strings.Replace(rotated, strings.Split(rotated, ".")[0], base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"nope","typ":"at+jwt"}`)), 1)
		if _, err := v.Verify(ctx, forged); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), `no key "nope"`) {
			t.Fatalf("an unknown key: %v", err)
		}
	}
	if n := is.keyFetches.Load(); n != 2 {
		t.Errorf("5 tokens of an unknown key fetched the keys %d times within KeysRefresh, want none", n-2)
	}
	is.down.Store(true)
	now = now.Add(time.Minute)
	if _, err := v.Verify(ctx, old); err != nil {
		t.Errorf("the issuer down, a known key: %v", err)
	}

	cold, _ := New(&Options{Issuer: is.URL, Resource: resource})
	if _, err := cold.Verify(ctx, old); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no keys ever had: %v", err)
	}
	if status, _ := cold.Challenge(ErrUnavailable, true); status != http.StatusServiceUnavailable {
		t.Errorf("no keys: status %d", status)
	}
}

// TestIntrospection: an opaque token is what the introspection endpoint
// says; inactive, of another resource or issuer, it is refused.
func TestIntrospection(t *testing.T) {
	is := newTestIssuer(t)
	exp := time.Now().Add(time.Hour).Unix()
	is.active["good"] = introspection{Active: true, Sub: "carol", Scope: "mcp", Iss: is.URL, Exp: exp, Aud: json.RawMessage(`"` + resource + `"`)}
	is.active["other"] = introspection{Active: true, Sub: "carol", Aud: json.RawMessage(`["https://other.example.com"]`)}
	is.active["old"] = introspection{Active: true, Sub: "carol", Exp: time.Now().Add(-time.Hour).Unix()}
	v, _ := New(&Options{Issuer: is.URL, Resource: resource, Introspection: &Introspection{ClientID: "bridge", ClientSecret: "s3cret"}})
	ctx := context.Background()
	if id, err := v.Verify(ctx, "good"); err != nil || id.Subject != "carol" || id.Issuer != is.URL {
		t.Fatalf("an active token: %+v %v", id, err)
	}
	for _, tok := range []string{"unknown", "other", "old"} {
		if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: %v", tok, err)
		}
	}
}

// TestResourceMetadata: the metadata names the configured resource and
// the issuer; the challenges are the specification's.
func TestResourceMetadata(t *testing.T) {
	v, err := New(&Options{Issuer: "https://id.example.com", Resource: resource, Scopes: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	m := v.Metadata()
	if m.Resource != resource || m.AuthorizationServers[0] != "https://id.example.com" || m.ScopesSupported[0] != "mcp" {
		t.Errorf("metadata: %+v", m)
	}
	if got := strings.Join(v.MetadataPaths(), " "); got != "/.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource" {
		t.Errorf("paths: %s", got)
	}
	meta := `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tt := range []struct {
		err    error
		sent   bool
		status int
		header string
	}{
		{ErrInvalidToken, false, 401, "Bearer " + meta + `, scope="mcp"`},
		{ErrInvalidToken, true, 401, "Bearer " + meta + `, error="invalid_token", scope="mcp"`},
		{ErrInsufficientScope, true, 403, "Bearer " + meta + `, error="insufficient_scope", scope="mcp"`},
	} {
		status, header := v.Challenge(tt.err, tt.sent)
		if status != tt.status || header != tt.header {
			t.Errorf("%v (sent %v): %d %q", tt.err, tt.sent, status, header)
		}
	}
	for _, bad := range []Options{{Issuer: "http://id.example.com", Resource: resource}, {Issuer: "https://id.example.com", Resource: "mcp"},
		{Issuer: "https://id.example.com", Resource: resource, Algorithms: []string{"HS256"}}, {Issuer: "https://id.example.com", Resource: resource, Algorithms: []string{"none"}}} {
		if _, err := New(&bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
