package console

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"net/http"
	"strings"
)

// Errors of New.
var (
	ErrShortToken = errors.New("the console token is shorter than 32 characters")
	ErrSameToken  = errors.New("the console token equals the clients' token (MCP_BRIDGE_HTTP_TOKEN): set a token of its own")
)

// New returns the console of src under opts, or why it cannot serve.
func New(src Source, opts Options) (*Console, error) {
	if len(opts.Token) < MinTokenLength {
		return nil, ErrShortToken
	}
	if opts.ClientToken != "" && opts.ClientToken == opts.Token {
		return nil, ErrSameToken
	}
	o := opts.withDefaults()
	c := &Console{opts: o, src: src, token: sha256.Sum256([]byte(o.Token)),
		auth: newAuthStore(o.SessionTTL, o.MaxSessions, o.SignInsByMinute), streams: make(chan struct{}, o.MaxStreams)}
	if o.ClientToken != "" {
		c.client = sha256.Sum256([]byte(o.ClientToken))
	}
	sub, _ := fs.Sub(assets, "assets")
	c.static = http.StripPrefix(assetsPath, http.FileServerFS(sub))
	c.mux = c.routes()
	return c, nil
}

// securityHeaders sets the headers every console answer carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the page's own form posts, which the Origin
	// check then refuses (found by the browser test). Nothing of the
	// console's URLs leaves for another site either way.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// ServeHTTP serves Path and everything under it; the caller has checked
// the request's Host and Origin as for MCP.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	c.mux.ServeHTTP(w, r)
}

// routes returns the console's routes: each path with its methods (a GET
// pattern serves HEAD too; any other method gets 405), the pages and the
// API behind the one authentication wrapper, authed, and the forms that
// change state behind form, which adds the CSRF check.
func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET "+assetsPath, c.static)
	// The directory itself is no asset (and no redirect to it).
	mux.HandleFunc(strings.TrimSuffix(assetsPath, "/"), http.NotFound)
	mux.HandleFunc("GET "+signInPath, c.serveSignInForm)
	mux.HandleFunc("POST "+signInPath, c.serveSignIn)
	mux.Handle("POST "+signOutPath, c.form(c.serveSignOut))
	mux.Handle("GET "+Path, c.authed(false, c.servePage))
	mux.Handle("GET "+Path+"/{$}", c.authed(false, c.servePage))
	mux.Handle("GET "+statePath, c.authed(true, c.serveState))
	mux.Handle("GET "+eventsPath, c.authed(true, c.serveEvents))
	mux.HandleFunc("HEAD "+eventsPath, notAllowed("GET")) // a stream has no HEAD
	mux.Handle("GET "+argsPath, c.authed(true, c.serveArguments))
	mux.Handle("POST "+answerPath, c.form(c.serveAnswer))
	return mux
}

// notAllowed returns the handler of a method the path does not serve.
func notAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
