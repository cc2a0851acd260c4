package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// wellKnown begins the paths of Protected Resource Metadata (RFC 9728).
const wellKnown = "/.well-known/oauth-protected-resource"

// Metadata returns the resource's Protected Resource Metadata: the
// configured resource URI, the issuer as its authorization server, the
// scopes it requires, bearer tokens in the header only.
func (v *Verifier) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.opts.Resource,
		AuthorizationServers:   []string{v.opts.Issuer},
		ScopesSupported:        v.opts.Scopes,
		BearerMethodsSupported: []string{"header"},
	}
}

// MetadataPaths returns the paths the metadata is served at: the form
// with the resource's path appended (/.well-known/oauth-protected-
// resource/mcp for a resource at /mcp), which clients try first, and the
// bare one.
func (v *Verifier) MetadataPaths() []string {
	u, _ := url.Parse(v.opts.Resource)
	paths := []string{}
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		paths = append(paths, wellKnown+p)
	}
	return append(paths, wellKnown)
}

// MetadataURL returns the URL a 401 names as resource_metadata: the
// path-suffixed form, on the resource's own origin.
func (v *Verifier) MetadataURL() string {
	u, _ := url.Parse(v.opts.Resource)
	m := url.URL{Scheme: u.Scheme, Host: u.Host, Path: v.MetadataPaths()[0]}
	return m.String()
}

// Challenge returns the status and the WWW-Authenticate value that
// answer a request refused for err (Verify's): 401 with the metadata's
// URL, and error="invalid_token" when a token was sent; 403
// insufficient_scope naming the scopes required; 503 when the issuer's
// keys are unavailable.
func (v *Verifier) Challenge(err error, tokenSent bool) (status int, header string) {
	params := []string{"resource_metadata=" + strconv.Quote(v.MetadataURL())}
	switch {
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, ""
	case errors.Is(err, ErrInsufficientScope):
		params = append(params, `error="insufficient_scope"`, "scope="+strconv.Quote(strings.Join(v.opts.Scopes, " ")))
		return http.StatusForbidden, "Bearer " + strings.Join(params, ", ")
	case tokenSent:
		params = append(params, `error="invalid_token"`)
	}
	if len(v.opts.Scopes) > 0 {
		params = append(params, "scope="+strconv.Quote(strings.Join(v.opts.Scopes, " ")))
	}
	return http.StatusUnauthorized, "Bearer " + strings.Join(params, ", ")
}
