package httpserve

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// identityKey is the context key of the caller the guard verified.
type identityKey struct{}

// withIdentity returns ctx carrying id.
func withIdentity(ctx context.Context, id *oauth.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// UserID is the go-sdk's TokenInfo.UserID of an identity: the pair
// (issuer, subject), which a session stays bound to.
func UserID(id *oauth.Identity) string { return id.Issuer + " " + id.Subject }

// tokenInfo returns what the go-sdk keeps of the caller: the identity
// (UserID, and Extra "identity"), the scopes and the expiry.
func tokenInfo(id *oauth.Identity) *auth.TokenInfo {
	return &auth.TokenInfo{UserID: UserID(id), Scopes: id.Scopes, Expiration: id.Expires,
		Extra: map[string]any{"identity": id}}
}

// identifiedHandler passes r, whose caller the guard verified, to next
// with the go-sdk's TokenInfo in its context (through RequireBearerToken,
// the one way to set it: its verifier returns the caller the guard put
// in the context, and the token is not verified twice).
func identifiedHandler(next http.Handler) http.Handler {
	return auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id, _ := ctx.Value(identityKey{}).(*oauth.Identity)
		if id == nil {
			return nil, auth.ErrInvalidToken
		}
		return tokenInfo(id), nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

// IdentityOf returns the caller of a request, as the guard verified it
// with OAuth on (SharedIdentity for the shared token); nil without OAuth.
func IdentityOf(extra *mcp.RequestExtra) *oauth.Identity {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	id, _ := extra.TokenInfo.Extra["identity"].(*oauth.Identity)
	return id
}
