package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Sentinel errors of Verify, for errors.Is.
var (
	// ErrInvalidToken reports a token that is not one of the issuer's
	// valid access tokens for this resource (401, invalid_token).
	ErrInvalidToken = errors.New("invalid token")
	// ErrInsufficientScope reports a valid token without a scope this
	// resource requires (403, insufficient_scope).
	ErrInsufficientScope = errors.New("insufficient scope")
)

// A Verifier verifies access tokens for one resource.
type Verifier struct {
	opts   Options
	issuer *issuer
	algs   []jose.SignatureAlgorithm
}

// New returns the Verifier of opts; it fetches nothing until a token
// comes.
func New(opts *Options) (*Verifier, error) {
	o := *opts
	switch {
	case o.Issuer == "":
		return nil, errors.New("no issuer")
	case o.Resource == "":
		return nil, errors.New("no resource URI")
	}
	if err := CheckURL(o.Issuer); err != nil {
		return nil, fmt.Errorf("the issuer: %w", err)
	}
	if err := CheckURL(o.Resource); err != nil {
		return nil, fmt.Errorf("the resource: %w", err)
	}
	if len(o.Audiences) == 0 {
		o.Audiences = []string{o.Resource}
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = defaultAlgorithms
	}
	if o.Leeway <= 0 {
		o.Leeway = defaultLeeway
	}
	if o.KeysRefresh <= 0 {
		o.KeysRefresh = defaultKeysRefresh
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: requestTimeout}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	v := &Verifier{opts: o}
	for _, a := range o.Algorithms {
		alg := jose.SignatureAlgorithm(a)
		if a == "none" || strings.HasPrefix(a, "HS") {
			return nil, fmt.Errorf("algorithm %s: only public-key algorithms are accepted", a)
		}
		v.algs = append(v.algs, alg)
	}
	v.issuer = &issuer{opts: &v.opts}
	return v, nil
}

// CheckURL reports whether s can be an issuer or a resource URI: https,
// or http on loopback; a host; no fragment.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Host == "":
		return fmt.Errorf("%q names no host", s)
	case u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q has a fragment or credentials", s)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q: want https (http only on loopback)", s)
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || strings.HasPrefix(host, "127.")
}

// Options returns the verifier's options, with their defaults.
func (v *Verifier) Options() Options { return v.opts }

// accessClaims are the claims of an access token (RFC 9068) the verifier
// reads besides the registered ones.
type accessClaims struct {
	Scope    string          `json:"scope"`
	SCP      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
}

// Verify returns who token says is calling, or why it does not:
// ErrInvalidToken, ErrInsufficientScope, or ErrUnavailable when the
// issuer's keys could never be had.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	var id *Identity
	var err error
	if strings.Count(token, ".") == 2 {
		id, err = v.verifyJWT(ctx, token)
	} else if v.opts.Introspection != nil {
		id, err = v.introspect(ctx, token)
	} else {
		err = fmt.Errorf("%w: not a JWT, and no introspection is configured", ErrInvalidToken)
	}
	if err != nil {
		return nil, err
	}
	for _, s := range v.opts.Scopes {
		if !slices.Contains(id.Scopes, s) {
			return id, fmt.Errorf("%w: the token lacks the scope %q", ErrInsufficientScope, s)
		}
	}
	return id, nil
}

// verifyJWT verifies a JWT access token: an accepted algorithm, typ
// at+jwt (so that the issuer's ID tokens are refused), a signature by a
// key of the issuer, iss, aud, exp (required), nbf and iat.
func (v *Verifier) verifyJWT(ctx context.Context, token string) (*Identity, error) {
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: want one signature", ErrInvalidToken)
	}
	h := tok.Headers[0]
	typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
	if t := strings.ToLower(typ); t != "at+jwt" && t != "application/at+jwt" {
		return nil, fmt.Errorf("%w: typ %q is not an access token's (at+jwt)", ErrInvalidToken, typ)
	}
	keys, err := v.issuer.key(ctx, h.KeyID)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key %q of the issuer", ErrInvalidToken, h.KeyID)
	}
	var claims jwt.Claims
	var extra accessClaims
	verified := false
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if tok.Claims(k.Key, &claims, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, fmt.Errorf("%w: the signature does not verify with the issuer's key %q", ErrInvalidToken, h.KeyID)
	}
	if claims.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp", ErrInvalidToken)
	}
	if claims.Subject == "" {
		return nil, fmt.Errorf("%w: no sub", ErrInvalidToken)
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: v.opts.Issuer, AnyAudience: v.opts.Audiences, Time: v.opts.Now()}, v.opts.Leeway)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	return &Identity{Issuer: claims.Issuer, Subject: claims.Subject, Scopes: scopes(extra), ClientID: extra.ClientID,
		Expires: claims.Expiry.Time()}, nil
}

// scopes returns a token's scopes: its scope claim (space-separated), or
// scp (a list or a string), as providers write them.
func scopes(c accessClaims) []string {
	if c.Scope != "" {
		return strings.Fields(c.Scope)
	}
	var list []string
	if json.Unmarshal(c.SCP, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(c.SCP, &one) == nil {
		return strings.Fields(one)
	}
	return nil
}

// introspection is what an introspection answer says (RFC 7662).
type introspection struct {
	Active   bool            `json:"active"`
	Scope    string          `json:"scope"`
	ClientID string          `json:"client_id"`
	Sub      string          `json:"sub"`
	Aud      json.RawMessage `json:"aud"`
	Iss      string          `json:"iss"`
	Exp      int64           `json:"exp"`
}

// introspect asks the issuer's introspection endpoint about an opaque
// token.
func (v *Verifier) introspect(ctx context.Context, token string) (*Identity, error) {
	in := v.opts.Introspection
	endpoint := in.Endpoint
	if endpoint == "" {
		v.issuer.mu.Lock()
		m, err := v.issuer.discover(ctx)
		v.issuer.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if endpoint = m.IntrospectionEndpoint; endpoint == "" {
			return nil, fmt.Errorf("%w: the issuer's metadata names no introspection_endpoint", ErrUnavailable)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(url.Values{"token": {token}, "token_type_hint": {"access_token"}}.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(in.ClientSecret))
	resp, err := v.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: introspecting: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: introspecting: %s", ErrUnavailable, resp.Status)
	}
	var r introspection
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: introspecting: %v", ErrUnavailable, err)
	}
	now := v.opts.Now()
	switch {
	case !r.Active:
		return nil, fmt.Errorf("%w: the issuer says it is not active", ErrInvalidToken)
	case r.Sub == "":
		return nil, fmt.Errorf("%w: no sub", ErrInvalidToken)
	case r.Iss != "" && r.Iss != v.opts.Issuer:
		return nil, fmt.Errorf("%w: issued by %q", ErrInvalidToken, r.Iss)
	case r.Exp != 0 && now.Add(-v.opts.Leeway).After(time.Unix(r.Exp, 0)):
		return nil, fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	if len(r.Aud) > 0 {
		var aud jwt.Audience
		if err := json.Unmarshal(r.Aud, &aud); err != nil || !slices.ContainsFunc(v.opts.Audiences, aud.Contains) {
			return nil, fmt.Errorf("%w: not for this resource", ErrInvalidToken)
		}
	}
	id := &Identity{Issuer: v.opts.Issuer, Subject: r.Sub, Scopes: strings.Fields(r.Scope), ClientID: r.ClientID}
	if r.Exp != 0 {
		id.Expires = time.Unix(r.Exp, 0)
	}
	return id, nil
}
