package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testToken   = "console-token-0123456789abcdef0123456789"
	clientToken = "clients-token-0123456789abcdef0123456789"
	hostile     = `<script>alert(1)</script><b onclick="x()">bold</b>`
)

// A fakeSource is a Source whose snapshot a test sets.
type fakeSource struct {
	mu      sync.Mutex
	snap    Snapshot
	answers []string // "id approve operator"
}

func (f *fakeSource) Snapshot(context.Context) Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}

// Answer records the answer to a question of the snapshot, and takes it
// off.
func (f *fakeSource) Answer(id string, approve bool, operator string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, q := range f.snap.Questions {
		if q.ID == id {
			f.snap.Questions = append(f.snap.Questions[:i], f.snap.Questions[i+1:]...)
			f.answers = append(f.answers, fmt.Sprintf("%s %v %s", id, approve, operator))
			return nil
		}
	}
	return errors.New("no such question")
}

// Arguments writes a question's Arguments as they are.
func (f *fakeSource) Arguments(id string) (func(io.Writer) error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, q := range f.snap.Questions {
		if q.ID == id {
			return func(w io.Writer) error { _, err := io.WriteString(w, q.Arguments); return err }, nil
		}
	}
	return nil, errors.New("no such question")
}

func (f *fakeSource) set(s Snapshot) {
	f.mu.Lock()
	f.snap = s
	f.mu.Unlock()
}

// serveConsole serves a console of a fresh fakeSource with opts (Token
// and ClientToken set when zero), over TLS when tls is set.
func serveConsole(t *testing.T, opts Options, tls bool) (*httptest.Server, *fakeSource) {
	t.Helper()
	src := &fakeSource{snap: Snapshot{Replica: "bridge-1", Host: "host-a", Status: "ok"}}
	if opts.Token == "" {
		opts.Token, opts.ClientToken = testToken, clientToken
	}
	if opts.Interval == 0 {
		opts.Interval = 5 * time.Millisecond
	}
	c, err := New(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(c)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, src
}

// request sends method path to srv with headers and form (POST when
// set), following no redirect, and returns the response with its body.
func request(t *testing.T, srv *httptest.Server, method, path string, headers map[string]string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	hc := *srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func bearerOf(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// signIn signs name in through the form and returns the session cookie.
func signIn(t *testing.T, srv *httptest.Server, name string) *http.Cookie {
	t.Helper()
	resp, body := request(t, srv, http.MethodPost, signInPath, map[string]string{"Origin": srv.URL},
		url.Values{"token": {testToken}, "name": {name}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Path {
		t.Fatalf("sign-in: %d %q to %q", resp.StatusCode, body, resp.Header.Get("Location"))
	}
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("sign-in set no cookie: %v", resp.Header["Set-Cookie"])
	return nil
}

func cookieHeader(c *http.Cookie) map[string]string {
	return map[string]string{"Cookie": c.Name + "=" + c.Value}
}

func TestNewRefusesTokens(t *testing.T) {
	if _, err := New(&fakeSource{}, Options{Token: testToken[:31]}); !errors.Is(err, ErrShortToken) {
		t.Errorf("a short token: %v, want ErrShortToken", err)
	}
	if _, err := New(&fakeSource{}, Options{Token: testToken, ClientToken: testToken}); !errors.Is(err, ErrSameToken) {
		t.Errorf("the clients' token: %v, want ErrSameToken", err)
	}
}

// TestUnauthenticated: without the token a browser is sent to sign in,
// and the data paths answer 401; the clients' token and a wrong one are
// refused.
func TestUnauthenticated(t *testing.T) {
	srv, _ := serveConsole(t, Options{}, false)
	resp, _ := request(t, srv, http.MethodGet, Path, nil, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != signInPath {
		t.Errorf("GET %s: %d to %q, want 303 to the sign-in form", Path, resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{eventsPath, statePath} {
		if resp, _ := request(t, srv, http.MethodGet, p, nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %d, want 401", p, resp.StatusCode)
		}
	}
	resp, body := request(t, srv, http.MethodGet, Path, bearerOf(clientToken), nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "MCP_BRIDGE_CONSOLE_TOKEN") {
		t.Errorf("the clients' token: %d %q, want 401 naming the console token", resp.StatusCode, body)
	}
	resp, _ = request(t, srv, http.MethodGet, statePath, bearerOf(testToken+"x"), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", resp.StatusCode)
	}
	resp, _ = request(t, srv, http.MethodGet, "/console/nothing", bearerOf(testToken), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown path: %d, want 404", resp.StatusCode)
	}
}

// TestRoutes: each path answers its own methods only (405 before any
// authentication, with the security headers), the page is at Path and
// Path/, and a path that is no page is 404, the assets' directory too.
func TestRoutes(t *testing.T) {
	srv, _ := serveConsole(t, Options{}, false)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, Path, http.StatusMethodNotAllowed},
		{http.MethodDelete, Path + "/", http.StatusMethodNotAllowed},
		{http.MethodPost, statePath, http.StatusMethodNotAllowed},
		{http.MethodHead, eventsPath, http.StatusMethodNotAllowed},
		{http.MethodPost, eventsPath, http.StatusMethodNotAllowed},
		{http.MethodPost, argsPath, http.StatusMethodNotAllowed},
		{http.MethodGet, answerPath, http.StatusMethodNotAllowed},
		{http.MethodGet, signOutPath, http.StatusMethodNotAllowed},
		{http.MethodPut, signInPath, http.StatusMethodNotAllowed},
		{http.MethodPost, assetsPath + "console.js", http.StatusMethodNotAllowed},
		{http.MethodGet, Path, http.StatusOK},
		{http.MethodGet, Path + "/", http.StatusOK},
		{http.MethodHead, statePath, http.StatusOK},
		{http.MethodGet, signInPath, http.StatusOK},
		{http.MethodGet, strings.TrimSuffix(assetsPath, "/"), http.StatusNotFound},
		{http.MethodGet, Path + "/state/more", http.StatusNotFound},
	} {
		resp, body := request(t, srv, c.method, c.path, bearerOf(testToken), nil)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d %q, want %d", c.method, c.path, resp.StatusCode, body, c.status)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s: no security headers", c.method, c.path)
		}
	}
}

// TestEveryRouteAuthenticated: every route but the sign-in form and the
// assets refuses a request without the console token, with the clients'
// token, with a wrong one or with a cookie of no session (the page by
// sending a browser to sign in, the others with 401, or 429 past the
// wrong tokens an address may send), and the forms that
// change state refuse a signed-in operator's POST without its CSRF
// token: nothing is answered or ended.
func TestEveryRouteAuthenticated(t *testing.T) {
	srv, src := serveConsole(t, Options{}, false)
	src.set(Snapshot{Questions: []Question{{ID: "q1", Server: "gh", Tool: "merge"}}})
	ck := signIn(t, srv, "Ada")
	form := url.Values{"question": {"q1"}, "answer": {"approve"}}
	routes := []struct {
		method, path string
		form         url.Values
		page         bool // a browser is sent to sign in
	}{
		{http.MethodGet, Path, nil, true},
		{http.MethodHead, Path, nil, true},
		{http.MethodGet, Path + "/", nil, true},
		{http.MethodGet, statePath, nil, false},
		{http.MethodHead, statePath, nil, false},
		{http.MethodGet, eventsPath, nil, false},
		{http.MethodGet, argsPath + "?question=q1", nil, false},
		{http.MethodHead, argsPath + "?question=q1", nil, false},
		{http.MethodPost, answerPath, form, false},
		{http.MethodPost, signOutPath, url.Values{}, false},
	}
	for _, r := range routes {
		for name, h := range map[string]map[string]string{
			"no credential":          {"Origin": srv.URL},
			"the clients' token":     bearerOf(clientToken),
			"a wrong token":          bearerOf(testToken + "x"),
			"a cookie of no session": {"Cookie": ck.Name + "=forged", "Origin": srv.URL},
		} {
			resp, _ := request(t, srv, r.method, r.path, h, r.form)
			bearer := h["Authorization"] != ""
			want := http.StatusUnauthorized
			if r.page && !bearer {
				want = http.StatusSeeOther
			}
			// Past a few wrong tokens the address gets 429 instead.
			if got := resp.StatusCode; got != want && !(bearer && got == http.StatusTooManyRequests) {
				t.Errorf("%s %s with %s: %d, want %d", r.method, r.path, name, got, want)
			}
		}
		if r.method != http.MethodPost {
			continue
		}
		h := cookieHeader(ck)
		h["Origin"] = srv.URL
		if resp, _ := request(t, srv, r.method, r.path, h, r.form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s signed in without the CSRF token: %d, want 403", r.method, r.path, resp.StatusCode)
		}
	}
	if len(src.answers) != 0 {
		t.Errorf("answers %q, want none", src.answers)
	}
	if resp, _ := request(t, srv, http.MethodGet, statePath, cookieHeader(ck), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the session after the refused sign-outs: %d, want 200", resp.StatusCode)
	}
}

// TestBearerPage: the token as a bearer opens the page, with the
// security headers and the replica named.
func TestBearerPage(t *testing.T) {
	srv, _ := serveConsole(t, Options{}, false)
	resp, body := request(t, srv, http.MethodGet, Path, bearerOf(testToken), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %q", Path, resp.StatusCode, body)
	}
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
		"Content-Type":            "text/html; charset=utf-8",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	for _, s := range []string{`data-replica="bridge-1"`, "host-a", `src="/console/assets/console.js"`} {
		if !strings.Contains(body, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	// No inline script, style or handler: the CSP would block them.
	for _, s := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "javascript:"} {
		if strings.Contains(body, s) {
			t.Errorf("the page holds %q", s)
		}
	}
	if strings.Contains(body, `id="signout"`) {
		t.Error("a bearer client got a sign-out form")
	}
	for _, a := range []string{"console.js", "console.css"} {
		resp, _ := request(t, srv, http.MethodGet, assetsPath+a, nil, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d", a, resp.StatusCode)
		}
	}
}

// TestSignIn: the form sets an HttpOnly, SameSite=Strict cookie (Secure
// under TLS) holding a session id, never the token, which then opens the
// page with the operator's name and a CSRF token.
func TestSignIn(t *testing.T) {
	for _, tls := range []bool{false, true} {
		srv, _ := serveConsole(t, Options{}, tls)
		resp, body := request(t, srv, http.MethodGet, signInPath, nil, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="signin"`) || !strings.Contains(body, `method="post"`) {
			t.Fatalf("the sign-in form: %d %q", resp.StatusCode, body)
		}
		ck := signIn(t, srv, "Ada")
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != Path || ck.Secure != tls || ck.MaxAge <= 0 {
			t.Errorf("tls=%v: cookie %+v, want HttpOnly, SameSite=Strict, Path=%s, Secure=%v", tls, ck, Path, tls)
		}
		if strings.Contains(ck.Value, testToken) || strings.Contains(ck.String(), testToken[:16]) || len(ck.Value) < 32 {
			t.Errorf("the cookie %q holds the token or is short", ck.Value)
		}
		resp, body = request(t, srv, http.MethodGet, Path, cookieHeader(ck), nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="operator">Ada<`) || !strings.Contains(body, `name="csrf" value="`) {
			t.Errorf("the page with the cookie: %d %q", resp.StatusCode, body)
		}
	}
}

// TestSignInSecureCookieBehindProxy: SecureCookie (a proxy terminates
// TLS) marks the cookie Secure on a plain connection.
func TestSignInSecureCookieBehindProxy(t *testing.T) {
	srv, _ := serveConsole(t, Options{SecureCookie: true}, false)
	if ck := signIn(t, srv, "Ada"); !ck.Secure || !ck.HttpOnly {
		t.Errorf("cookie %+v, want Secure and HttpOnly", ck)
	}
}

// TestSignInRefused: a wrong token, the clients' token, no name or a
// foreign origin do not sign in; past the wrong tokens of a minute a
// wrong one gets 429, the right one still signs in.
func TestSignInRefused(t *testing.T) {
	srv, _ := serveConsole(t, Options{SignInsByMinute: 3}, false)
	same := map[string]string{"Origin": srv.URL}
	cases := []struct {
		headers map[string]string
		form    url.Values
		status  int
	}{
		{same, url.Values{"token": {"wrong"}, "name": {"Ada"}}, http.StatusUnauthorized},
		{same, url.Values{"token": {clientToken}, "name": {"Ada"}}, http.StatusUnauthorized},
		{same, url.Values{"token": {testToken}, "name": {""}}, http.StatusBadRequest},
		{map[string]string{"Origin": "https://evil.example"}, url.Values{"token": {testToken}, "name": {"Ada"}}, http.StatusForbidden},
		{nil, url.Values{"token": {testToken}, "name": {"Ada"}}, http.StatusForbidden},
		{same, url.Values{"token": {testToken + "x"}, "name": {"Ada"}}, http.StatusUnauthorized},
		{same, url.Values{"token": {testToken + "y"}, "name": {"Ada"}}, http.StatusTooManyRequests},
	}
	for i, c := range cases {
		resp, body := request(t, srv, http.MethodPost, signInPath, c.headers, c.form)
		if resp.StatusCode != c.status {
			t.Errorf("case %d: %d %q, want %d", i, resp.StatusCode, body, c.status)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("case %d set a cookie", i)
		}
	}
	if resp, _ := request(t, srv, http.MethodGet, statePath, bearerOf("wrong"), nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a wrong bearer past the limit: %d, want 429", resp.StatusCode)
	}
	if resp, _ := request(t, srv, http.MethodGet, statePath, bearerOf(testToken), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the right bearer past the limit: %d, want 200", resp.StatusCode)
	}
	signIn(t, srv, "Ada")
}

// TestSignOut needs the session's CSRF token and the page's origin, and
// ends the session.
func TestSignOut(t *testing.T) {
	srv, _ := serveConsole(t, Options{}, false)
	ck := signIn(t, srv, "Ada")
	_, page := request(t, srv, http.MethodGet, Path, cookieHeader(ck), nil)
	_, rest, _ := strings.Cut(page, `name="csrf" value="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	if csrf == "" {
		t.Fatal("no CSRF token in the page")
	}
	h := cookieHeader(ck)
	h["Origin"] = srv.URL
	if resp, _ := request(t, srv, http.MethodPost, signOutPath, h, url.Values{"csrf": {"wrong"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a wrong CSRF token: %d, want 403", resp.StatusCode)
	}
	foreign := cookieHeader(ck)
	foreign["Origin"] = "https://evil.example"
	if resp, _ := request(t, srv, http.MethodPost, signOutPath, foreign, url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign origin: %d, want 403", resp.StatusCode)
	}
	resp, _ := request(t, srv, http.MethodPost, signOutPath, h, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != signInPath {
		t.Fatalf("sign-out: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if cs := resp.Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("sign-out cookies %v, want the session cookie cleared", cs)
	}
	if resp, _ := request(t, srv, http.MethodGet, statePath, cookieHeader(ck), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie after sign-out: %d, want 401", resp.StatusCode)
	}
}

// An sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// openEvents opens the event stream with headers, failing the test
// unless it answers 200; the stream ends with the test.
func openEvents(t *testing.T, srv *httptest.Server, headers map[string]string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+eventsPath, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan sseEvent)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
				ev = sseEvent{}
			}
		}
	}()
	return events
}

// waitEvent returns the first event of events whose data holds want.
func waitEvent(t *testing.T, events <-chan sseEvent, want string) sseEvent {
	t.Helper()
	for ev := range events {
		if strings.Contains(ev.data, want) {
			return ev
		}
	}
	t.Fatalf("the stream ended without an event holding %q", want)
	return sseEvent{}
}

// TestEventsPushChanges: a session appearing and a call's output arrive
// on the stream (bearer and cookie alike), hostile text only as JSON
// strings; the streams are bounded.
func TestEventsPushChanges(t *testing.T) {
	srv, src := serveConsole(t, Options{MaxStreams: 2}, false)
	ck := signIn(t, srv, "Ada")
	byBearer := openEvents(t, srv, bearerOf(testToken))
	byCookie := openEvents(t, srv, cookieHeader(ck))
	waitEvent(t, byBearer, `"replica":"bridge-1"`)
	if resp, _ := request(t, srv, http.MethodGet, eventsPath, bearerOf(testToken), nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a third stream: %d, want 503", resp.StatusCode)
	}
	s := src.Snapshot(context.Background())
	s.Sessions = []Session{{Name: "session-7" + hostile, Engine: "docker", Container: "0123456789ab"}}
	src.set(s)
	for _, events := range []<-chan sseEvent{byBearer, byCookie} {
		ev := waitEvent(t, events, `"name":"session-7`)
		if ev.name != "snapshot" || strings.Contains(ev.data, "<script>") || !strings.Contains(ev.data, `\u003cscript\u003ealert(1)\u003c/script\u003e`) {
			t.Errorf("event %q: %q, want the name as an escaped JSON string", ev.name, ev.data)
		}
	}
	s.Calls = []Call{{ID: 1, Session: "session-7", Code: "print(x)", Output: []string{"line 1", hostile}}}
	src.set(s)
	ev := waitEvent(t, byBearer, `"line 1"`)
	if strings.Contains(ev.data, "<b") || !strings.Contains(ev.data, `\u003cb onclick=\"x()\"\u003ebold`) {
		t.Errorf("the call's output: %q", ev.data)
	}
}

// TestEventsEndAtSignOut: a cookie's stream says "signedout" once the
// session ends.
func TestEventsEndAtSignOut(t *testing.T) {
	srv, _ := serveConsole(t, Options{}, false)
	ck := signIn(t, srv, "Ada")
	events := openEvents(t, srv, cookieHeader(ck))
	waitEvent(t, events, "bridge-1")
	_, page := request(t, srv, http.MethodGet, Path, cookieHeader(ck), nil)
	_, rest, _ := strings.Cut(page, `name="csrf" value="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	h := cookieHeader(ck)
	h["Origin"] = srv.URL
	request(t, srv, http.MethodPost, signOutPath, h, url.Values{"csrf": {csrf}})
	for ev := range events {
		if ev.name == "signedout" {
			return
		}
	}
	t.Fatal("the stream ended without a signedout event")
}

// TestPageEscapes: hostile session names, output, code and audit records
// show as text in the page.
func TestPageEscapes(t *testing.T) {
	srv, src := serveConsole(t, Options{}, false)
	src.set(Snapshot{Replica: "bridge-1", Status: "ok",
		Sessions: []Session{{Name: "s" + hostile}},
		Calls:    []Call{{ID: 1, Session: "s" + hostile, Code: hostile, Output: []string{hostile}}},
		Audit:    []Record{{Event: "tool_call", Detail: hostile}},
		AuditOn:  true})
	resp, body := request(t, srv, http.MethodGet, Path, bearerOf(testToken), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b onclick") {
		t.Errorf("the page holds hostile markup: %s", body)
	}
	if n := strings.Count(body, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 5 {
		t.Errorf("the hostile text shows escaped %d times, want 5", n)
	}
}

// TestRing keeps the last records, the newest first, with the fields
// besides time, event and session as JSON.
func TestRing(t *testing.T) {
	g := NewRing(2)
	if got := g.Records(); len(got) != 0 {
		t.Fatalf("empty ring: %v", got)
	}
	g.Add([]byte(`{"time":"t1","event":"run_python","session":"s1","status":"success"}`))
	g.Add([]byte(`not json`))
	g.Add([]byte(`{"time":"t2","event":"egress","session":"s1","host":"pypi.org"}`))
	g.Add([]byte(`{"time":"t3","event":"tool_call","session":"s2","tool":"` + strings.Repeat("x", 500) + `"}`))
	got := g.Records()
	if len(got) != 2 || got[0].Time != "t3" || got[1].Time != "t2" || got[1].Event != "egress" || got[1].Detail != `{"host":"pypi.org"}` {
		t.Fatalf("records %+v", got)
	}
	if len(got[0].Detail) > maxDetail+len("…") || !strings.HasSuffix(got[0].Detail, "…") {
		t.Errorf("a long detail is not cut: %d bytes", len(got[0].Detail))
	}
	// An MCP session's ID is shown cut short, as in the sessions' table.
	g.Add([]byte(`{"time":"t4","event":"run_python","session":"s1","mcp_session":"replica-a.MIY3A2ZBHWPHS7FCT2DEZMBWDX"}`))
	if got := g.Records()[0].Detail; got != `{"mcp_session":"replica-a.MIY3A2…"}` {
		t.Errorf("the record's MCP session: %s", got)
	}
}

func TestShortSessionID(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"", ""},
		{"ABCDEF", "ABCDEF"},
		{"MIY3A2ZBHWPHS7FCT2DEZMBWDX", "MIY3A2…"},
		{"replica-a.MIY3A2ZBHWPHS7FCT2DEZMBWDX", "replica-a.MIY3A2…"},
		{"r.ABC", "r.ABC"},
	} {
		if got := ShortSessionID(c.id); got != c.want {
			t.Errorf("ShortSessionID(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}

// csrfOf returns the CSRF token of the console page ck opens.
func csrfOf(t *testing.T, srv *httptest.Server, ck *http.Cookie) string {
	t.Helper()
	_, page := request(t, srv, http.MethodGet, Path, cookieHeader(ck), nil)
	_, rest, _ := strings.Cut(page, `name="csrf" value="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	if csrf == "" {
		t.Fatal("no CSRF token in the page")
	}
	return csrf
}

// TestAnswer: the page shows a question with its answer form; an answer
// needs the CSRF token and the page's origin (a bearer neither), names
// the operator, and counts once.
func TestAnswer(t *testing.T) {
	srv, src := serveConsole(t, Options{}, false)
	src.set(Snapshot{Replica: "bridge-1", Questions: []Question{
		{ID: "q1", Session: "session-1", Server: "gh", Tool: "create_issue", Arguments: `{"title":"` + hostile + `"}`},
		{ID: "q2", Session: "session-1", Server: "gh", Tool: "merge"}}})
	ck := signIn(t, srv, "Ada")
	csrf := csrfOf(t, srv, ck)
	_, page := request(t, srv, http.MethodGet, Path, cookieHeader(ck), nil)
	if !strings.Contains(page, `data-question="q1"`) || !strings.Contains(page, `action="/console/answer"`) || strings.Contains(page, "<script>alert") {
		t.Fatalf("the page's questions: %s", page)
	}
	h := cookieHeader(ck)
	h["Origin"] = srv.URL
	for _, c := range []struct {
		headers map[string]string
		form    url.Values
		status  int
	}{
		{h, url.Values{"question": {"q1"}, "answer": {"approve"}}, http.StatusForbidden},
		{h, url.Values{"csrf": {csrf + "x"}, "question": {"q1"}, "answer": {"approve"}}, http.StatusForbidden},
		{cookieHeader(ck), url.Values{"csrf": {csrf}, "question": {"q1"}, "answer": {"approve"}}, http.StatusForbidden},
		{nil, url.Values{"question": {"q1"}, "answer": {"approve"}}, http.StatusUnauthorized},
		{h, url.Values{"csrf": {csrf}, "question": {"q1"}, "answer": {"maybe"}}, http.StatusBadRequest},
		{h, url.Values{"csrf": {csrf}, "question": {"q1"}, "answer": {"approve"}}, http.StatusSeeOther},
		{h, url.Values{"csrf": {csrf}, "question": {"q1"}, "answer": {"decline"}}, http.StatusNotFound},
		{map[string]string{"Authorization": "Bearer " + testToken, "X-Console-Operator": "ci-bot"}, url.Values{"question": {"q2"}, "answer": {"decline"}}, http.StatusOK},
	} {
		if resp, body := request(t, srv, http.MethodPost, answerPath, c.headers, c.form); resp.StatusCode != c.status {
			t.Errorf("%v %v: %d %q, want %d", c.headers, c.form, resp.StatusCode, body, c.status)
		}
	}
	if want := []string{"q1 true Ada", "q2 false ci-bot"}; fmt.Sprint(src.answers) != fmt.Sprint(want) {
		t.Errorf("answers %q, want %q", src.answers, want)
	}
}

// TestWholeArguments: a question's whole arguments are served, as text
// and behind the token, at argsPath; the page links them and labels the
// code's line as the sandbox's claim.
func TestWholeArguments(t *testing.T) {
	srv, src := serveConsole(t, Options{}, false)
	src.set(Snapshot{Replica: "bridge-1", Questions: []Question{
		{ID: "q1", Server: "gh", Tool: "create_issue", Arguments: `  "title" = "` + hostile + `"`, ArgumentsBytes: 9, Line: 7}}})
	_, page := request(t, srv, http.MethodGet, Path, bearerOf(testToken), nil)
	if !strings.Contains(page, `href="/console/arguments?question=q1"`) || !strings.Contains(page, "whole arguments (9 bytes)") ||
		!strings.Contains(page, "Line (the sandbox's claim)") {
		t.Errorf("the page's question: %s", page)
	}
	resp, body := request(t, srv, http.MethodGet, argsPath+"?question=q1", bearerOf(testToken), nil)
	if resp.StatusCode != http.StatusOK || body != `  "title" = "`+hostile+`"` || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("whole arguments: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := request(t, srv, http.MethodGet, argsPath+"?question=q1", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("whole arguments without the token: %d", resp.StatusCode)
	}
	if resp, _ := request(t, srv, http.MethodGet, argsPath+"?question=nope", bearerOf(testToken), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("whole arguments of no question: %d", resp.StatusCode)
	}
}

// A notifyingSource is a fakeSource that is a Notifier: set wakes the
// streams.
type notifyingSource struct {
	*fakeSource
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifyingSource) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifyingSource) set(s Snapshot) {
	n.fakeSource.set(s)
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}

// TestEventsOnChange: a Notifier's change is pushed at once, not at the
// stream's next look (an hour here); a burst of changes makes at most
// two events (one at once, one when PushGap ends), the last with the
// burst's last change.
func TestEventsOnChange(t *testing.T) {
	src := &notifyingSource{fakeSource: &fakeSource{snap: Snapshot{Replica: "bridge-1", Status: "ok"}}}
	c, err := New(src, Options{Token: testToken, Interval: time.Hour, PushGap: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	events := openEvents(t, srv, bearerOf(testToken))
	waitEvent(t, events, `"replica":"bridge-1"`)
	s := src.Snapshot(context.Background())
	for i := range 5 {
		s.Calls = []Call{{ID: 1, Session: "s", Output: []string{fmt.Sprintf("line %d", i)}}}
		src.set(s)
	}
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) == 0 || !strings.Contains(got[len(got)-1], `"line 4"`) {
		select {
		case ev := <-events:
			got = append(got, ev.data)
		case <-timeout:
			t.Fatalf("the burst's last change was not pushed within 5 s (the interval is an hour): %q", got)
		}
	}
	select {
	case ev := <-events:
		got = append(got, ev.data)
	case <-time.After(600 * time.Millisecond):
	}
	if len(got) > 2 {
		t.Errorf("%d events for one burst of 5 changes, want at most 2: %q", len(got), got)
	}
}
