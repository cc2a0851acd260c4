package config

import (
	"fmt"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
)

// oauthOptions reads the authorization server's settings: nil without
// an issuer; an issuer needs the resource URI, and both are checked as
// the verifier will take them.
func (r *reader) oauthOptions() *oauth.Options {
	issuer, resource := r.get(EnvOAuthIssuer), r.get(EnvOAuthResource)
	switch {
	case issuer == "" && resource == "":
		return nil
	case issuer == "":
		r.errs = append(r.errs, fmt.Errorf("%s is set without %s: set the authorization server's issuer too", EnvOAuthResource, EnvOAuthIssuer))
		return nil
	case resource == "":
		r.errs = append(r.errs, fmt.Errorf("%s is set without %s: set this server's canonical resource URI, such as https://mcp.example.com/mcp", EnvOAuthIssuer, EnvOAuthResource))
		return nil
	}
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' })
	}
	o := &oauth.Options{Issuer: issuer, Resource: resource, Audiences: split(r.get(EnvOAuthAudience)), Scopes: split(r.get(EnvOAuthScopes))}
	switch id, secret := r.get(EnvOAuthClientID), r.get(EnvOAuthSecret); {
	case id != "" && secret != "":
		o.Introspection = &oauth.Introspection{ClientID: id, ClientSecret: secret}
	case id != "" || secret != "":
		r.errs = append(r.errs, fmt.Errorf("%s and %s go together", EnvOAuthClientID, EnvOAuthSecret))
		return nil
	}
	if _, err := oauth.New(o); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s, %s: %v", EnvOAuthIssuer, EnvOAuthResource, err))
		return nil
	}
	return o
}
