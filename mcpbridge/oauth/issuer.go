package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// maxDocument bounds a metadata document or key set read from the issuer.
const maxDocument = 1 << 20

// ErrUnavailable reports that the issuer's keys could not be had: no
// token can be verified until they can (503, nothing admitted).
var ErrUnavailable = errors.New("the authorization server's keys are unavailable")

// metadata is what the bridge reads of the issuer's metadata (RFC 8414,
// or OpenID Connect Discovery).
type metadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// An issuer is the authorization server as the verifier knows it: its
// metadata and keys, fetched when first needed and again, at most once
// per KeysRefresh, for a key ID it does not know; the keys last had keep
// verifying while it cannot be reached.
type issuer struct {
	opts *Options

	mu      sync.Mutex
	meta    *metadata
	keys    *jose.JSONWebKeySet
	fetched time.Time // when the keys were last fetched, or tried
	lastErr error
}

// metadataURLs returns where the issuer's metadata may be: RFC 8414's
// well-known URI (the path inserted after the host), then OpenID
// Connect's (appended, as providers serve it), then RFC 8414's form of
// OpenID's.
func metadataURLs(iss string) ([]string, error) {
	u, err := url.Parse(iss)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the issuer %q is not a URL", iss)
	}
	path := strings.TrimSuffix(u.Path, "/")
	at := func(p string) string {
		v := *u
		v.Path, v.RawPath, v.RawQuery, v.Fragment = p, "", "", ""
		return v.String()
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + path),
		at(path + "/.well-known/openid-configuration"),
		at("/.well-known/openid-configuration" + path),
	}, nil
}

// getJSON reads the JSON document at u into v.
func (is *issuer) getJSON(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := is.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return err
	}
	if len(data) > maxDocument {
		return fmt.Errorf("%s: over %d bytes", u, maxDocument)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v", u, err)
	}
	return nil
}

// discover returns the issuer's metadata, read the first time. Its
// issuer must be the configured one, exactly (RFC 8414 §3.3).
func (is *issuer) discover(ctx context.Context) (*metadata, error) {
	if is.meta != nil {
		return is.meta, nil
	}
	urls, err := metadataURLs(is.opts.Issuer)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, u := range urls {
		var m metadata
		if err := is.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != is.opts.Issuer {
			return nil, fmt.Errorf("%s names the issuer %q, not %q", u, m.Issuer, is.opts.Issuer)
		}
		if m.JWKSURI == "" && is.opts.Introspection == nil {
			return nil, fmt.Errorf("%s names no jwks_uri", u)
		}
		is.meta = &m
		return &m, nil
	}
	return nil, fmt.Errorf("reading the issuer's metadata: %w", errors.Join(errs...))
}

// key returns the issuer's keys of key ID kid (every key when kid is
// empty), fetching the key set when none was had yet, or when kid is not
// in it and the last fetch is older than KeysRefresh.
func (is *issuer) key(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.keys != nil {
		if keys := pick(is.keys, kid); len(keys) > 0 {
			return keys, nil
		}
	}
	now := is.opts.Now()
	if !is.fetched.IsZero() && now.Sub(is.fetched) < is.opts.KeysRefresh {
		if is.keys == nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, is.lastErr)
		}
		return nil, nil // unknown, and asked too recently
	}
	is.fetched = now
	if err := is.fetch(ctx); err != nil {
		is.lastErr = err
		is.opts.Logger.Warn("fetching the authorization server's keys", "issuer", is.opts.Issuer, "err", err)
		if is.keys == nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return nil, nil
	}
	return pick(is.keys, kid), nil
}

// fetch reads the issuer's key set. is.mu is held.
func (is *issuer) fetch(ctx context.Context) error {
	m, err := is.discover(ctx)
	if err != nil {
		return err
	}
	if m.JWKSURI == "" {
		return errors.New("the issuer's metadata names no jwks_uri")
	}
	var set jose.JSONWebKeySet
	if err := is.getJSON(ctx, m.JWKSURI, &set); err != nil {
		return fmt.Errorf("reading its keys: %w", err)
	}
	is.keys = &set
	return nil
}

// pick returns the public signing keys of set with key ID kid (all of
// them when kid is empty).
func pick(set *jose.JSONWebKeySet, kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if (kid != "" && k.KeyID != kid) || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		out = append(out, k)
	}
	return out
}
