package console

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// clientFrom returns an HTTP client whose connections leave from the
// loopback address from (127.0.0.2 is loopback too), following no
// redirect.
func clientFrom(from string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
}

// send sends method path with a bearer token (none when empty) or a
// sign-in form, from hc, and returns the status.
func send(t *testing.T, hc *http.Client, base, method, path, token string, form url.Values) int {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestWrongTokensLimitedPerAddress: ten wrong tokens from 127.0.0.2
// (bearer and sign-in form) use up that address's minute, and its next
// wrong token gets 429; the right token is compared first and never
// refused, from 127.0.0.1 or from 127.0.0.2 itself (behind a proxy
// every client is one address); 127.0.0.1's wrong tokens are counted
// on their own. Before the fix one counter served every address and was
// checked before the token: the right token from 127.0.0.1 got 429.
func TestWrongTokensLimitedPerAddress(t *testing.T) {
	srv, _ := serveConsole(t, Options{}, false) // 10 a minute, the default
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("served at %s, want 127.0.0.1", srv.URL)
	}
	attacker, operator := clientFrom("127.0.0.2"), clientFrom("127.0.0.1")
	for i := range defaultSignInsByMinute {
		var got int
		if i%2 == 0 {
			got = send(t, attacker, srv.URL, http.MethodGet, statePath, fmt.Sprintf("wrong-%d", i), nil)
		} else {
			got = send(t, attacker, srv.URL, http.MethodPost, signInPath, "", url.Values{"token": {"wrong"}, "name": {"Mallory"}})
		}
		if got != http.StatusUnauthorized {
			t.Fatalf("wrong token %d from 127.0.0.2: %d, want 401", i, got)
		}
	}
	if got := send(t, attacker, srv.URL, http.MethodGet, statePath, "wrong-again", nil); got != http.StatusTooManyRequests {
		t.Errorf("wrong token past the limit from 127.0.0.2: %d, want 429", got)
	}
	if got := send(t, attacker, srv.URL, http.MethodPost, signInPath, "", url.Values{"token": {"wrong"}, "name": {"Mallory"}}); got != http.StatusTooManyRequests {
		t.Errorf("wrong sign-in past the limit from 127.0.0.2: %d, want 429", got)
	}
	if got := send(t, operator, srv.URL, http.MethodGet, statePath, testToken, nil); got != http.StatusOK {
		t.Errorf("right token from 127.0.0.1: %d, want 200", got)
	}
	if got := send(t, operator, srv.URL, http.MethodPost, signInPath, "", url.Values{"token": {testToken}, "name": {"Ada"}}); got != http.StatusSeeOther {
		t.Errorf("right sign-in from 127.0.0.1: %d, want 303", got)
	}
	if got := send(t, attacker, srv.URL, http.MethodGet, statePath, testToken, nil); got != http.StatusOK {
		t.Errorf("right token from 127.0.0.2 past its limit: %d, want 200", got)
	}
	if got := send(t, operator, srv.URL, http.MethodGet, statePath, "wrong", nil); got != http.StatusUnauthorized {
		t.Errorf("a wrong token from 127.0.0.1: %d, want 401 (its own count)", got)
	}
}

// TestRemoteKey: IPv4 by address, IPv6 by /64 (zone and port dropped,
// mapped IPv4 as IPv4), anything else as it is.
func TestRemoteKey(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.2:5555":                "127.0.0.2",
		"[::ffff:10.1.2.3]:80":          "10.1.2.3",
		"[2001:db8:1:2:aaaa::1]:443":    "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff::9]:1": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:1":           "2001:db8:1:3::/64",
		"[fe80::1%eth0]:22":             "fe80::/64",
		"@":                             "@",
		"not an address":                "not an address",
	} {
		if got := remoteKey(in); got != want {
			t.Errorf("remoteKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFailureLimitBounded: a flood of addresses keeps at most
// maxLimitedAddresses counts (plus the shared one past them), and the
// addresses past the bound share one count.
func TestFailureLimitBounded(t *testing.T) {
	l := newFailureLimit(2)
	l.max = 8
	for i := range 100 {
		l.fail(fmt.Sprintf("[2001:db8:%x::1]:1", i))
	}
	if n := l.tracked(); n > 9 {
		t.Errorf("%d addresses counted, want at most 9", n)
	}
	if !l.fail("[2001:db8:ffff::1]:1") {
		t.Error("an address past the bound is not limited with the others past it")
	}
	if l.fail("[2001:db8:0::2]:1") {
		t.Error("a counted address (one failure) is limited")
	}
}
