package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// cookieName is the cookie holding a signed-in session's id.
const cookieName = "mcp_console"

// maxNameLength bounds the operator's name typed at sign-in.
const maxNameLength = 64

// An operator is who a request comes from: a signed-in session, or a
// bearer of the token (session nil).
type operator struct {
	name    string
	session *opSession
	id      string // the session's id
}

// authenticate returns who r comes from, or answers it: 401 for a
// wrong bearer token (429 past its address's wrong tokens of a minute)
// or, when api is set, for none; else a redirect to the sign-in form.
// The token is compared first: a right one is never refused by the
// limit.
func (c *Console) authenticate(w http.ResponseWriter, r *http.Request, api bool) (operator, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		given, ok := bearer(h)
		if !ok || !c.tokenMatches(given) {
			msg := "invalid console token"
			switch {
			case !ok:
				msg = "want Authorization: Bearer <MCP_BRIDGE_CONSOLE_TOKEN>"
			case c.isClientToken(given):
				msg = "the clients' token (MCP_BRIDGE_HTTP_TOKEN) does not open the console: use MCP_BRIDGE_CONSOLE_TOKEN"
			}
			if c.auth.limit.fail(r.RemoteAddr) {
				c.refuse(w, r, http.StatusTooManyRequests, "too many wrong tokens from this address: wait a minute")
				return operator{}, false
			}
			c.refuse(w, r, http.StatusUnauthorized, msg)
			return operator{}, false
		}
		name := "bearer"
		if n, ok := validName(r.Header.Get("X-Console-Operator")); ok {
			name = n
		}
		return operator{name: name}, true
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		if s := c.auth.get(ck.Value); s != nil {
			return operator{name: s.name, session: s, id: ck.Value}, true
		}
	}
	if api {
		c.refuse(w, r, http.StatusUnauthorized, "sign in at "+signInPath+" or send Authorization: Bearer <MCP_BRIDGE_CONSOLE_TOKEN>")
		return operator{}, false
	}
	http.Redirect(w, r, signInPath, http.StatusSeeOther)
	return operator{}, false
}

// An authedHandler serves a request of an operator authenticate let in.
type authedHandler func(w http.ResponseWriter, r *http.Request, who operator)

// authed is the console's one authentication wrapper: it serves h to the
// requests authenticate lets in, and answers the others as it says (api:
// 401; else a redirect to the sign-in form).
func (c *Console) authed(api bool, h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who, ok := c.authenticate(w, r, api); ok {
			h(w, r, who)
		}
	})
}

// form serves h, behind authed as the API is, to the POSTs that change
// state: a body of a few fields, and for a signed-in operator its
// session's CSRF token and the page's own origin (csrfOK).
func (c *Console) form(h authedHandler) http.Handler {
	return c.authed(true, func(w http.ResponseWriter, r *http.Request, who operator) {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if !csrfOK(r, who) {
			c.refuse(w, r, http.StatusForbidden, "missing or wrong CSRF token, or a foreign Origin")
			return
		}
		h(w, r, who)
	})
}

// refuse answers r with status and msg, and logs it.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.opts.Logger.Info("console request refused", "status", status, "why", msg, "path", r.URL.Path, "remote", r.RemoteAddr)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="console"`)
	}
	http.Error(w, msg, status)
}

// bearer returns the token of an Authorization header value.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// validName returns the operator's name, trimmed, when it is 1 to
// maxNameLength printable characters.
func validName(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxNameLength {
		return "", false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return "", false
		}
	}
	return s, true
}

// sameOrigin reports whether a POST comes from a page of the host it
// is sent to: its Origin names that host or, without an Origin, the
// browser says it is same-origin. The guard in front has refused the
// origins that are not allowed at all; a state-changing form is taken
// from the console's own pages only.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// csrfOK reports whether a POST of who carries its session's CSRF token
// (form field csrf or header X-CSRF-Token) and comes from the page's own
// origin; a bearer of the token needs neither, as no browser sends it
// unasked.
func csrfOK(r *http.Request, who operator) bool {
	if who.session == nil {
		return true
	}
	given := r.Header.Get("X-CSRF-Token")
	if given == "" {
		given = r.PostFormValue("csrf")
	}
	return sameOrigin(r) && subtle.ConstantTimeCompare([]byte(given), []byte(who.session.csrf)) == 1
}

// setCookie sets (maxAge > 0) or clears the session cookie: HttpOnly,
// SameSite=Strict, for Path only, Secure under TLS or when the options
// say the TLS is a proxy's.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: Path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || c.opts.SecureCookie})
}

// signInData is what the sign-in form is rendered from.
type signInData struct {
	Error string
	Name  string
}

// serveSignInForm shows the sign-in form.
func (c *Console) serveSignInForm(w http.ResponseWriter, r *http.Request) {
	c.render(w, "signin.html", signInData{})
}

// serveSignIn signs in (POST: token and name), then sends the browser to
// the console.
func (c *Console) serveSignIn(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		c.refuse(w, r, http.StatusForbidden, "sign in from the console's own page")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	token := r.PostFormValue("token")
	name, nameOK := validName(r.PostFormValue("name"))
	switch {
	case !c.tokenMatches(token):
		if c.auth.limit.fail(r.RemoteAddr) {
			c.refuse(w, r, http.StatusTooManyRequests, "too many wrong tokens from this address: wait a minute")
			return
		}
		msg := "wrong console token"
		if c.isClientToken(token) {
			msg = "that is the clients' token (MCP_BRIDGE_HTTP_TOKEN): the console has a token of its own (MCP_BRIDGE_CONSOLE_TOKEN)"
		}
		c.opts.Logger.Info("console sign-in refused", "why", msg, "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusUnauthorized)
		c.render(w, "signin.html", signInData{Error: msg, Name: name})
		return
	case !nameOK:
		w.WriteHeader(http.StatusBadRequest)
		c.render(w, "signin.html", signInData{Error: "type your name (1 to 64 characters): approvals are recorded under it"})
		return
	}
	id, _ := c.auth.add(name)
	c.setCookie(w, r, id, int(c.opts.SessionTTL/time.Second))
	c.opts.Logger.Info("console sign-in", "operator", name, "remote", r.RemoteAddr)
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// serveSignOut ends a signed-in session (a form).
func (c *Console) serveSignOut(w http.ResponseWriter, r *http.Request, who operator) {
	if who.session != nil {
		c.auth.remove(who.id)
		c.setCookie(w, r, "", -1)
		c.opts.Logger.Info("console sign-out", "operator", who.name)
	}
	http.Redirect(w, r, signInPath, http.StatusSeeOther)
}
