package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// The tests send traffic to loopback only: hosts are IP literals of
// 127.0.0.1, and names go to a fake resolver whose answers a fake dialer
// refuses to dial unless they are loopback.

// fakeResolver answers names from a table and counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	table   map[string][]netip.Addr
	lookups []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	if a, ok := r.table[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// loopDialer dials loopback addresses only and records every attempt.
type loopDialer struct {
	mu    sync.Mutex
	dials []string
}

func (d *loopDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: %s is not loopback, not dialled", address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

// A rig is a gateway behind a loopback listener, with its policy file,
// audit log, resolver and dialer.
type rig struct {
	t        *testing.T
	dir      string
	policy   string
	gw       *Gateway
	client   *Client
	proxy    *url.URL
	resolver *fakeResolver
	dialer   *loopDialer
	auditLog string
}

func newRig(t *testing.T, network string, roots *x509.CertPool) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), resolver: &fakeResolver{table: map[string][]netip.Addr{}}, dialer: &loopDialer{}}
	r.policy = filepath.Join(r.dir, "policy.json")
	if err := os.WriteFile(r.policy, []byte(`{"network": `+network+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	file := policy.Open(r.policy, r.dir, slog.New(slog.DiscardHandler))
	r.auditLog = filepath.Join(r.dir, "audit.jsonl")
	al, err := audit.Open(r.auditLog, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	gw, err := New(&Options{
		Policy:   file.Current,
		Resolver: r.resolver, Dialer: r.dialer, RootCAs: roots, Audit: al,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.gw, r.client = gw, gw.NewClient("session-1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); r.client.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.client.Serve(c)
		}
	}()
	r.proxy = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return r
}

// httpClient is a client that uses the rig's gateway as its proxy and
// trusts roots.
func (r *rig) httpClient(roots *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(r.proxy),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

// raw sends text to the gateway and returns its answer's status line.
func (r *rig) raw(text string) string {
	r.t.Helper()
	c, err := net.Dial("tcp", r.proxy.Host)
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, text)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// records returns the audit log's text, once the gateway wrote n records.
func (r *rig) records(n int) string {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(r.auditLog)
		if strings.Count(string(data), "\n") >= n || time.Now().After(deadline) {
			return string(data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// echoHeaders is a handler answering with the request's Authorization
// header and path.
func echoHeaders(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "auth=%q path=%s host=%s", r.Header.Get("Authorization"), r.URL.Path, r.Host)
}

// authLog is a handler that records the Authorization header of each
// request, then answers as echoHeaders (whose echo the gateway masks).
type authLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *authLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.seen = append(l.seen, r.Header.Get("Authorization"))
	l.mu.Unlock()
	echoHeaders(w, r)
}

func (l *authLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.seen, ",")
}

func TestPlainHTTPAllowedWithSecret(t *testing.T) {
	t.Setenv("EGRESS_TEST_TOKEN", "s3cret-value")
	seen := &authLog{}
	srv := httptest.NewServer(seen)
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${EGRESS_TEST_TOKEN}"}]}`, hp, hp), nil)
	req, _ := http.NewRequest("GET", srv.URL+"/data?token=hidden", nil)
	req.Header.Set("Authorization", "forged")
	resp, err := r.httpClient(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := seen.all(); got != "Bearer s3cret-value" {
		t.Fatalf("the server saw Authorization %q", got)
	}
	// The server's echo reaches the sandbox masked.
	if want := `auth="` + strings.Repeat("*", len("Bearer s3cret-value")) + `" path=/data`; !strings.HasPrefix(string(body), want) {
		t.Fatalf("the sandbox read %q, want %q", body, want)
	}
	rec := r.records(1)
	if strings.Contains(rec, "s3cret") || strings.Contains(rec, "hidden") {
		t.Fatalf("the audit record shows the secret or the query: %s", rec)
	}
	for _, want := range []string{`"event":"egress"`, `"outcome":"allowed"`, `"method":"GET"`, `"path":"/data"`, `"address":"` + hp + `"`, `"session":"session-1"`} {
		if !strings.Contains(rec, want) {
			t.Errorf("the record lacks %s: %s", want, rec)
		}
	}
}

func TestRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echoHeaders))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(hp)
	r := newRig(t, fmt.Sprintf(`{"allow": [%q, "api.example.test:%s"]}`, hp, port), nil)
	r.resolver.table["api.example.test"] = []netip.Addr{netip.MustParseAddr("10.1.2.3")}
	for _, tt := range []struct {
		name, request, status, why string
	}{
		{"another loopback address", "GET http://127.0.0.2:" + port + "/ HTTP/1.1\r\nHost: 127.0.0.2:" + port + "\r\n\r\n", "403", "127.0.0.2:" + port},
		{"a port not allowed", "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", "403", "127.0.0.1:1"},
		{"a name resolving to a private address", "GET http://api.example.test:" + port + "/ HTTP/1.1\r\nHost: api.example.test:" + port + "\r\n\r\n", "403", "10.1.2.3"},
		{"a numeric spelling", "GET http://2130706433:" + port + "/ HTTP/1.1\r\nHost: 2130706433:" + port + "\r\n\r\n", "403", "2130706433"},
		{"a hex spelling", "GET http://0x7f.1:" + port + "/ HTTP/1.1\r\nHost: 0x7f.1:" + port + "\r\n\r\n", "403", "0x7f.1"},
		{"a mapped IPv6 loopback", "GET http://[::ffff:127.0.0.1]:" + port + "/ HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:" + port + "\r\n\r\n", "403", "::ffff:127.0.0.1"},
		{"a Host header that is not the target", "GET http://" + hp + "/ HTTP/1.1\r\nHost: other.example.test\r\n\r\n", "403", "other.example.test"},
		{"an https URL in absolute form", "GET https://" + hp + "/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n", "400", "CONNECT"},
		{"an origin-form request", "GET / HTTP/1.1\r\nHost: " + hp + "\r\n\r\n", "400", "absolute form"},
		{"an oversized head", "GET http://" + hp + "/ HTTP/1.1\r\nHost: " + hp + "\r\nX-Big: " + strings.Repeat("a", maxHeadBytes) + "\r\n\r\n", "431", "over"},
		{"garbage", "\x16\x03\x01 not http\r\n\r\n", "400", "reading the request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line := r.raw(tt.request)
			if !strings.HasPrefix(line, "HTTP/1.1 "+tt.status+" ") || !strings.Contains(line, tt.why) {
				t.Fatalf("answer %q, want %s naming %q", line, tt.status, tt.why)
			}
		})
	}
	r.dialer.mu.Lock()
	defer r.dialer.mu.Unlock()
	if len(r.dialer.dials) != 0 {
		t.Errorf("refused targets were dialled: %v", r.dialer.dials)
	}
	for _, l := range r.resolver.lookups {
		if strings.HasPrefix(l, "0x") || l == "2130706433" {
			t.Errorf("a numeric spelling was looked up: %s", l)
		}
	}
}

func TestNoNetworkSection(t *testing.T) {
	r := newRig(t, `{}`, nil)
	os.WriteFile(r.policy, []byte(`{}`), 0o600)
	line := r.raw("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
	if !strings.HasPrefix(line, "HTTP/1.1 403 ") || !strings.Contains(line, "127.0.0.1:9") {
		t.Fatalf("no network section: %q", line)
	}
	os.WriteFile(r.policy, []byte(`{"network": {"allow": [}`), 0o600)
	line = r.raw("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
	if !strings.HasPrefix(line, "HTTP/1.1 403 ") || !strings.Contains(line, "policy") {
		t.Fatalf("a broken policy: %q", line)
	}
}

func TestTunnelEndToEnd(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(echoHeaders))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "https://")
	r := newRig(t, fmt.Sprintf(`{"allow": [%q]}`, hp), nil)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	client := r.httpClient(roots)
	resp, err := client.Get(srv.URL + "/tunnelled")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if !strings.Contains(string(body), "path=/tunnelled") {
		t.Fatalf("through the tunnel: %q", body)
	}

	// A ClientHello naming another server than the CONNECT host.
	c, err := net.Dial("tcp", r.proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hp, hp)
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); !strings.Contains(line, " 200 ") {
		t.Fatalf("CONNECT: %q", line)
	}
	br.ReadString('\n')
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{ServerName: "elsewhere.example.test", RootCAs: roots})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS handshake naming another server went through")
	}
	if rec := r.records(2); !strings.Contains(rec, "elsewhere.example.test") || !strings.Contains(rec, `"outcome":"denied"`) || !strings.Contains(rec, `"outcome":"allowed"`) {
		t.Fatalf("the refused tunnel's record: %s", rec)
	}
}

func TestInterceptAddsSecretOverTLS(t *testing.T) {
	t.Setenv("EGRESS_TEST_TOKEN", "tls-s3cret")
	seen := &authLog{}
	srv := httptest.NewTLSServer(seen)
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "https://")
	upstreamRoots := x509.NewCertPool()
	upstreamRoots.AddCert(srv.Certificate())
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "token ${EGRESS_TEST_TOKEN}"}]}`, hp, hp), upstreamRoots)
	sandboxRoots := x509.NewCertPool()
	if !sandboxRoots.AppendCertsFromPEM(r.gw.CA()) {
		t.Fatal("the CA's PEM does not parse")
	}
	client := r.httpClient(sandboxRoots)
	for i := range 2 { // the second request reuses the intercepted connection
		resp, err := client.Get(srv.URL + fmt.Sprintf("/api/%d", i))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`auth="%s" path=/api/%d`, strings.Repeat("*", len("token tls-s3cret")), i); !strings.HasPrefix(string(body), want) {
			t.Fatalf("request %d: the sandbox read %q, want %q", i, body, want)
		}
	}
	if got := seen.all(); got != "token tls-s3cret,token tls-s3cret" {
		t.Fatalf("the server saw Authorization %q", got)
	}
	// The sandbox, trusting only its system roots, refuses the gateway's
	// certificate: it must be given the CA.
	if _, err := r.httpClient(upstreamRoots).Get(srv.URL + "/x"); err == nil {
		t.Fatal("a client without the gateway's CA accepted its certificate")
	}
	client.CloseIdleConnections()
	if rec := r.records(2); strings.Contains(rec, "tls-s3cret") {
		t.Fatalf("the audit log shows the secret: %s", rec)
	}
}

func TestLimits(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sized" {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
		}
		io.WriteString(w, big)
	}))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "max_connections": 2, "max_bytes_per_call": 65536}`, hp), nil)

	// Two connections held open: a third is refused at once.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", r.proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond) // let the gateway count them
	if line := r.raw("GET " + srv.URL + "/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n"); !strings.HasPrefix(line, "HTTP/1.1 429 ") {
		t.Fatalf("a third connection: %q", line)
	}
	for _, c := range held {
		c.Close()
	}
	time.Sleep(100 * time.Millisecond)

	r.client.BeginCall()
	resp, err := r.httpClient(nil).Get(srv.URL + "/big")
	if err == nil {
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n >= int64(len(big)) {
			t.Fatalf("1 MiB went through a call bounded to 64 KiB")
		}
	}
	if rec := r.records(2); !strings.Contains(rec, "max_bytes_per_call") {
		t.Fatalf("the cut download's record: %s", rec)
	}
	// The call is told, once, naming the connection.
	if note, want := r.client.EndCall(), "egress: the connection to "+hp+" was cut: the call's bytes through the gateway passed max_bytes_per_call (65536)"; !strings.HasPrefix(note, want) {
		t.Fatalf("the call's notice: %q, want %q…", note, want)
	}
	if note := r.client.EndCall(); note != "" {
		t.Fatalf("a second EndCall: %q", note)
	}

	// A response whose length is known to be over what is left is
	// refused before its body, with a 403 saying so.
	r.client.BeginCall()
	resp, err = r.httpClient(nil).Get(srv.URL + "/sized")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// (The request's own bytes were spent: what is left is a little less.)
	want := regexp.MustCompile(`^` + regexp.QuoteMeta(hp) + `: the response of 1048576 bytes is over the 65[0-9]{3} bytes left of the call's max_bytes_per_call \(65536\) \(in .*policy.json\)$`)
	if resp.StatusCode != http.StatusForbidden || !want.MatchString(strings.TrimPrefix(resp.Status, "403 ")) || !want.MatchString(strings.TrimSpace(string(body))) {
		t.Fatalf("a sized response over the budget: %s %q", resp.Status, body)
	}
	if note := r.client.EndCall(); !strings.Contains(note, "was refused: its response of 1048576 bytes is over the 65") {
		t.Fatalf("the call's notice: %q", note)
	}
	var none *Client
	if none.EndCall() != "" {
		t.Fatal("a nil client's EndCall")
	}
}

func TestConnectCarriesTLSOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r := newRig(t, fmt.Sprintf(`{"allow": [%q]}`, ln.Addr().String()), nil)
	c, err := net.Dial("tcp", r.proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", ln.Addr())
	io.Copy(io.Discard, c)
	if rec := r.records(1); !strings.Contains(rec, "does not carry TLS") {
		t.Fatalf("plain text in a tunnel: %s", rec)
	}
}

func TestStalledReaderTimesOut(t *testing.T) {
	big := strings.Repeat("y", 32<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) }))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "idle_timeout": 0.3}`, hp), nil)
	c, err := net.Dial("tcp", r.proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s/big HTTP/1.1\r\nHost: %s\r\n\r\n", srv.URL, hp)
	// The code never reads: the gateway gives up after the idle timeout
	// instead of holding the connection for ever.
	if rec := r.records(1); !strings.Contains(rec, `"outcome":"error"`) || !strings.Contains(rec, "relaying the response") {
		t.Fatalf("a reader that never reads: %s", rec)
	}
}

// TestRedirectIsCheckedPerHop: an allowed host's redirect to a host the
// policy does not allow is followed by the client through the gateway,
// which refuses that hop.
func TestRedirectIsCheckedPerHop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.2:9/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, fmt.Sprintf(`{"allow": [%q]}`, hp), nil)
	resp, err := r.httpClient(nil).Get(srv.URL + "/start")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "127.0.0.2:9") {
		t.Fatalf("the redirect's hop: %d %q", resp.StatusCode, body)
	}
	if rec := r.records(2); !strings.Contains(rec, `"outcome":"allowed"`) || !strings.Contains(rec, `"host":"127.0.0.2"`) {
		t.Fatalf("records: %s", rec)
	}
	r.dialer.mu.Lock()
	defer r.dialer.mu.Unlock()
	for _, d := range r.dialer.dials {
		if strings.HasPrefix(d, "127.0.0.2") {
			t.Fatalf("the refused hop was dialled: %v", r.dialer.dials)
		}
	}
}

// A writeLog is a net.Conn that records each Write it is given.
type writeLog struct {
	net.Conn
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, string(p))
	w.mu.Unlock()
	return w.Conn.Write(p)
}

// TestReplyHeadInOneWrite: a response's head, however many headers it
// has, reaches the sandbox's connection in one write (one frame of the
// transport), and a body of known length in one more.
func TestReplyHeadInOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range 12 {
			w.Header().Set(fmt.Sprintf("X-Header-%d", i), strings.Repeat("v", i))
		}
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	r := newRig(t, fmt.Sprintf(`{"allow": [%q]}`, hp), nil)
	sandbox, gateway := net.Pipe()
	log := &writeLog{Conn: gateway}
	done := make(chan struct{})
	go func() { defer close(done); r.client.Serve(log) }()
	go io.WriteString(sandbox, "GET "+srv.URL+"/ HTTP/1.1\r\nHost: "+hp+"\r\n\r\n")
	reply, _ := io.ReadAll(sandbox)
	<-done
	if !strings.HasPrefix(string(reply), "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(string(reply), "\r\n\r\nok") {
		t.Fatalf("the reply: %q", reply)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.writes) != 2 || !strings.HasSuffix(log.writes[0], "\r\n\r\n") || log.writes[1] != "ok" {
		t.Fatalf("%d writes: %q; want the head, then the body", len(log.writes), log.writes)
	}
}

// TestInstallClient: an install client's connections reach the index
// hosts it was given, which the policy's network section does not name,
// and no host that is neither an index nor a file host, even one the
// section allows; an index's secret goes with GET and HEAD only, any
// other method refused with a 403 saying why, before the index sees it.
func TestInstallClient(t *testing.T) {
	t.Setenv("EGRESS_INDEX_TOKEN", "index-s3cret-token")
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		echoHeaders(w, r)
	}))
	defer srv.Close()
	allowed := httptest.NewServer(http.HandlerFunc(echoHeaders))
	defer allowed.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	ahp := strings.TrimPrefix(allowed.URL, "http://")
	r := newRig(t, fmt.Sprintf(`{"allow": ["api.example.test", %q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${EGRESS_INDEX_TOKEN}"}]}`, ahp, hp), nil)
	ic := r.gw.NewInstallClient("session-1", policy.InstallHosts{Index: []string{hp}})
	ask := func(c *Client, request string) string {
		sandbox, gateway := net.Pipe()
		go c.Serve(gateway)
		go io.WriteString(sandbox, request)
		reply, _ := io.ReadAll(sandbox)
		if strings.Contains(string(reply), "index-s3cret") {
			t.Errorf("the answer shows the index's token: %q", reply)
		}
		line, _, _ := strings.Cut(string(reply), "\r\n")
		return line
	}
	get := "GET " + srv.URL + "/simple/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n"
	if line := ask(ic, get); line != "HTTP/1.1 200 OK" {
		t.Fatalf("the index through the install client: %q", line)
	}
	if line := ask(r.client, get); !strings.HasPrefix(line, "HTTP/1.1 403 ") {
		t.Fatalf("the index through the sandbox's own client: %q", line)
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "TRACE"} {
		req := m + " " + srv.URL + "/upload HTTP/1.1\r\nHost: " + hp + "\r\nContent-Length: 4\r\n\r\ndata"
		if line := ask(ic, req); !strings.HasPrefix(line, "HTTP/1.1 403 ") || !strings.Contains(line, m+" is refused") {
			t.Errorf("%s to the index through the install client: %q", m, line)
		}
	}
	mu.Lock()
	if got := strings.Join(seen, ","); got != "GET Bearer index-s3cret-token" {
		t.Errorf("the index saw %q", got)
	}
	mu.Unlock()
	r.resolver.table["other.example.test"] = []netip.Addr{netip.MustParseAddr("93.184.216.34")}
	if line := ask(ic, "GET http://other.example.test/ HTTP/1.1\r\nHost: other.example.test\r\n\r\n"); !strings.HasPrefix(line, "HTTP/1.1 403 ") {
		t.Fatalf("a host neither an index nor allowed, through the install client: %q", line)
	}
	if line := ask(ic, "GET "+allowed.URL+"/ HTTP/1.1\r\nHost: "+ahp+"\r\n\r\n"); !strings.HasPrefix(line, "HTTP/1.1 403 ") {
		t.Fatalf("a host the section allows, through the install client: %q", line)
	}
}

// TestPolicyNamedByBaseName: a refusal the sandbox reads names the policy
// file by its base name, not where it is.
func TestPolicyNamedByBaseName(t *testing.T) {
	r := newRig(t, `{"allow": ["api.example.test"]}`, nil)
	line := r.raw("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
	if !strings.HasPrefix(line, "HTTP/1.1 403 ") || !strings.Contains(line, "(in policy.json)") || strings.Contains(line, r.dir) {
		t.Errorf("a refusal: %q", line)
	}
	os.WriteFile(r.policy, []byte(`{"network": {"allow": [}`), 0o600)
	line = r.raw("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
	if !strings.HasPrefix(line, "HTTP/1.1 403 ") || !strings.Contains(line, "policy.json") || strings.Contains(line, r.dir) {
		t.Errorf("a broken policy's refusal: %q", line)
	}
}
