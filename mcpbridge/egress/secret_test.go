package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// echoToken is the secret the echo tests' policy injects.
const echoToken = "s3cret-echo-token-0123456789"

// echoBody is what the echo server answers: the request's Authorization
// header, quoted.
func echoBody(r *http.Request) []byte {
	return []byte(fmt.Sprintf("you sent Authorization: %s (method %s)\n", r.Header.Get("Authorization"), r.Method))
}

// echoServer answers with the request's headers reflected: in its body
// (written in two parts that split the secret, flushed apart), in a
// response header, to TRACE as message/http; compressed when the request
// accepts gzip (or always on /always-gzip), and in ranges where asked.
func echoServer(w http.ResponseWriter, r *http.Request) {
	body := echoBody(r)
	w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	w.Header().Set("X-Api-Version", "2022-11-28") // an ordinary value: left as it is
	switch {
	case r.Method == "TRACE":
		w.Header().Set("Content-Type", "message/http")
		r.Write(w)
	case r.URL.Path == "/always-gzip" || r.URL.Path == "/gzip" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"):
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		gz.Write(body)
		gz.Close()
	case r.URL.Path == "/ranged":
		http.ServeContent(w, r, "echo.txt", time.Unix(1e9, 0), bytes.NewReader(body))
	case r.URL.Path == "/split":
		half := bytes.Index(body, []byte(echoToken)) + len(echoToken)/2
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body[:half])
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		w.Write(body[half:])
	case r.URL.Path == "/plain":
		io.WriteString(w, "hello")
	default:
		w.Write(body)
	}
}

// echoRig is a rig whose policy injects echoToken into the requests for
// an HTTPS echo server, and a client of it that trusts the gateway's CA.
func echoRig(t *testing.T) (*rig, *http.Client, *httptest.Server) {
	t.Setenv("EGRESS_ECHO_TOKEN", echoToken)
	srv := httptest.NewTLSServer(http.HandlerFunc(echoServer))
	t.Cleanup(srv.Close)
	hp := strings.TrimPrefix(srv.URL, "https://")
	upstream := x509.NewCertPool()
	upstream.AddCert(srv.Certificate())
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${EGRESS_ECHO_TOKEN}"},
		{"host": %q, "header": "X-Client", "value": "v3"}]}`, hp, hp, hp), upstream)
	sandbox := x509.NewCertPool()
	sandbox.AppendCertsFromPEM(r.gw.CA())
	client := r.httpClient(sandbox)
	client.Transport.(*http.Transport).DisableCompression = true // the test asks for gzip itself
	t.Cleanup(client.CloseIdleConnections)
	return r, client, srv
}

// TestEchoedSecretIsMasked: an upstream that echoes the injected secret
// in its body (also split across two writes), in a header, compressed or
// in a range, never shows it to the sandbox: each occurrence is masked
// with as many bytes, Content-Length stays right, ordinary values are
// left alone, and the audit record counts the masks.
func TestEchoedSecretIsMasked(t *testing.T) {
	r, client, srv := echoRig(t)
	mask := strings.Repeat("*", len("Bearer "+echoToken))
	want := "you sent Authorization: " + mask + " (method GET)\n"
	for _, tt := range []struct {
		path    string
		headers map[string]string
	}{
		{"/echo", nil},
		{"/split", nil},
		{"/gzip", map[string]string{"Accept-Encoding": "gzip"}},
		{"/ranged", map[string]string{"Range": "bytes=0-40"}},
		{"/ranged", map[string]string{"Range": "bytes=30-", "If-Range": `"x"`}},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tt.path, nil)
		for k, v := range tt.headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: reading the body: %v", tt.path, err)
		}
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("%s %v: %d %q, want 200 %q", tt.path, tt.headers, resp.StatusCode, body, want)
		}
		if got := resp.Header.Get("X-Echo"); got != mask {
			t.Errorf("%s: the echoing header is %q, want %q", tt.path, got, mask)
		}
		if got := resp.Header.Get("X-Api-Version"); got != "2022-11-28" {
			t.Errorf("%s: an ordinary header became %q", tt.path, got)
		}
		if resp.ContentLength >= 0 && resp.ContentLength != int64(len(body)) {
			t.Errorf("%s: Content-Length %d for %d bytes", tt.path, resp.ContentLength, len(body))
		}
	}
	// A short value written in the file is ordinary text, not masked.
	resp, err := client.Get(srv.URL + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Errorf("an ordinary GET: %d %q", resp.StatusCode, body)
	}
	client.CloseIdleConnections()
	rec := r.records(6)
	if strings.Contains(rec, echoToken) {
		t.Fatalf("the audit log shows the secret: %s", rec)
	}
	if !strings.Contains(rec, `"masked":2`) {
		t.Errorf("no record counts the masks: %s", rec)
	}
}

// TestEchoingMethodsRefused: TRACE and TRACK to a host the gateway adds a
// secret to are refused with a 403 saying why; the host never sees them.
func TestEchoingMethodsRefused(t *testing.T) {
	_, client, srv := echoRig(t)
	for _, m := range []string{"TRACE", "TRACK"} {
		req, _ := http.NewRequest(m, srv.URL+"/echo", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), m+" is refused") || strings.Contains(string(body), echoToken) {
			t.Errorf("%s: %d %q, want a 403 saying it is refused", m, resp.StatusCode, body)
		}
	}
}

// TestEncodedAnswerRefused: a host that compresses its answer though the
// gateway asked for identity gets its answer refused (a 502 saying why):
// the mask could not see the secret in it.
func TestEncodedAnswerRefused(t *testing.T) {
	_, client, srv := echoRig(t)
	resp, err := client.Get(srv.URL + "/always-gzip")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `content coding "gzip"`) {
		t.Errorf("a compressed answer: %d %q", resp.StatusCode, body)
	}
	if _, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
		t.Errorf("the compressed answer reached the sandbox")
	}
}

// TestEveryInterceptedRequestAudited: each request of an intercepted
// tunnel has its own egress record, its method and path, not the first
// only.
func TestEveryInterceptedRequestAudited(t *testing.T) {
	r, client, srv := echoRig(t)
	for i := range 3 {
		resp, err := client.Get(fmt.Sprintf("%s/plain?n=%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	req, _ := http.NewRequest("DELETE", srv.URL+"/item/7", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	var paths []string
	deadline := time.Now().Add(10 * time.Second)
	for len(paths) < 4 && time.Now().Before(deadline) {
		paths = paths[:0]
		data, _ := os.ReadFile(r.auditLog)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["event"] == "egress" {
				paths = append(paths, fmt.Sprint(rec["method"], " ", rec["path"]))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Join(paths, ","); got != "GET /plain,GET /plain,GET /plain,DELETE /item/7" {
		t.Errorf("egress records: %s", got)
	}
}

// TestQuotedSecretMaskedInRefusals: an answer so malformed that the
// gateway refuses it, quoting it, does not carry the secret back either.
func TestQuotedSecretMaskedInRefusals(t *testing.T) {
	t.Setenv("EGRESS_ECHO_TOKEN", echoToken)
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
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				// A status line Go quotes in its error: `malformed HTTP
				// status code "<the token>"`.
				fmt.Fprintf(c, "%s\r\n\r\n", req.Header.Get("Authorization"))
			}()
		}
	}()
	hp := ln.Addr().String()
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${EGRESS_ECHO_TOKEN}"}]}`, hp, hp), nil)
	line := r.raw("GET http://" + hp + "/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n")
	if !strings.HasPrefix(line, "HTTP/1.1 502 ") || strings.Contains(line, echoToken) {
		t.Errorf("a malformed answer quoting the secret: %q", line)
	}
	if rec := r.records(1); strings.Contains(rec, echoToken) {
		t.Errorf("the record shows the secret: %s", rec)
	}
}
