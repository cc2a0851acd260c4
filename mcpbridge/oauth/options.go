// Package oauth makes `serve -http` an OAuth 2.1 resource server, as the
// MCP authorization specification asks: it describes the resource
// (Protected Resource Metadata, RFC 9728) and verifies the access tokens
// an authorization server issued for it, JWTs (RFC 9068) against the
// issuer's keys, or opaque tokens by introspection (RFC 7662), into the
// Identity of the person calling: the pair (issuer, subject).
package oauth

import (
	"log/slog"
	"net/http"
	"time"
)

// Options configure a Verifier.
type Options struct {
	// Issuer is the authorization server's issuer identifier
	// (MCP_BRIDGE_OAUTH_ISSUER), an https URL (http on loopback only).
	// Required.
	Issuer string
	// Resource is this server's canonical resource URI
	// (MCP_BRIDGE_OAUTH_RESOURCE), such as https://mcp.example.com/mcp;
	// never derived from a request's Host. Required.
	Resource string
	// Audiences are the values of a token's aud of which one must be
	// there (MCP_BRIDGE_OAUTH_AUDIENCE). Zero: Resource.
	Audiences []string
	// Scopes are the scopes every token must hold
	// (MCP_BRIDGE_OAUTH_SCOPES). Zero: none.
	Scopes []string
	// Algorithms are the JWS algorithms accepted. Zero: RS256, RS384,
	// RS512, PS256, PS384, PS512, ES256, ES384, ES512 and EdDSA (never
	// none, never an HMAC: the issuer's keys are public).
	Algorithms []string
	// Leeway is the clock skew allowed on exp, nbf and iat. Zero: 30 s.
	Leeway time.Duration
	// Introspection, when set, verifies tokens that are not JWTs at the
	// issuer's introspection endpoint (RFC 7662) with this client's
	// credentials. Zero: only JWTs are accepted.
	Introspection *Introspection
	// KeysRefresh is the shortest time between two fetches of the
	// issuer's keys for a token of an unknown key ID. Zero: 30 s.
	KeysRefresh time.Duration
	// Client makes the requests to the issuer. Zero: a client with a
	// 10-second timeout.
	Client *http.Client
	// Logger receives reports. Zero: discarded.
	Logger *slog.Logger
	// Now is the clock. Zero: time.Now.
	Now func() time.Time
}

// Introspection is the client an opaque token is introspected with.
type Introspection struct {
	// Endpoint is the introspection endpoint. Zero: the one the issuer's
	// metadata names.
	Endpoint string
	// ClientID and ClientSecret authenticate the bridge to it (HTTP
	// Basic).
	ClientID, ClientSecret string
}

// Defaults of Options' zero values.
const (
	defaultLeeway      = 30 * time.Second
	defaultKeysRefresh = 30 * time.Second
	requestTimeout     = 10 * time.Second
)

// defaultAlgorithms are the JWS algorithms of public keys.
var defaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// An Identity is who a verified token says is calling.
type Identity struct {
	// Issuer and Subject name the person: the pair is the identity.
	Issuer, Subject string
	// Scopes are the token's scopes.
	Scopes []string
	// ClientID is the OAuth client the token was issued to, when it says.
	ClientID string
	// Expires is when the token expires (zero: it does not say).
	Expires time.Time
}
