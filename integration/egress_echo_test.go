//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoToken is the secret TestEgressEchoMasked's policy injects.
const echoToken = "it-echo-s3cret-0123456789abcdef"

// echoHandler reflects the request's Authorization header: in its body,
// written in two parts that split the secret (flushed 50 ms apart), in a
// response header, to TRACE as message/http; gzip-compressed when the
// request accepts it, in ranges when asked (ServeContent).
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body := []byte(fmt.Sprintf("you sent Authorization: %s\n", r.Header.Get("Authorization")))
	w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	switch {
	case r.Method == "TRACE":
		w.Header().Set("Content-Type", "message/http")
		r.Write(w)
	case r.URL.Path == "/gzip" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"):
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		gz.Write(body)
		gz.Close()
	case r.URL.Path == "/ranged":
		http.ServeContent(w, r, "echo.txt", time.Unix(1e9, 0), bytes.NewReader(body))
	case r.URL.Path == "/plain":
		fmt.Fprint(w, "hello")
	default: // the secret split across two writes
		cut := bytes.Index(body, []byte(echoToken)) + len(echoToken)/2
		if cut < len(echoToken)/2 {
			cut = len(body) / 2
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		w.Write(body[cut:])
	}
}

// echoProbe is the sandbox's side: %[1]q is the echo server's URL. It
// prints, per request, the status, the body, the echoing header and
// whether the body's length is its Content-Length.
const echoProbe = `import urllib.request, urllib.error
def ask(method, path, headers={}):
    try:
        r = urllib.request.urlopen(urllib.request.Request(%[1]q + path, method=method, headers=headers), timeout=20)
        body = r.read()
        n = r.headers.get("Content-Length")
        return "%%d %%r x-echo=%%s length-ok=%%s" %% (r.status, body.decode(), r.headers.get("X-Echo"), n is None or int(n) == len(body))
    except urllib.error.HTTPError as e:
        return "HTTPError %%d %%s" %% (e.code, e.reason)
for what, method, path, headers in (
        ("echo", "GET", "/echo", {}),
        ("gzip", "GET", "/gzip", {"Accept-Encoding": "gzip"}),
        ("range", "GET", "/ranged", {"Range": "bytes=0-30"}),
        ("trace", "TRACE", "/echo", {}),
        ("track", "TRACK", "/echo", {}),
        ("plain", "GET", "/plain", {})):
    print(what, ask(method, path, headers))
`

// TestEgressEchoMasked: an HTTPS host whose requests get the operator's
// token, and which echoes it (in its body, split across two writes, in a
// response header, compressed when asked, in a range when asked, and to
// TRACE), never hands it to sandbox code: each occurrence is masked with
// as many bytes (lengths stay right), TRACE and TRACK are refused, and
// the audit log counts the masks; an ordinary GET gets its 200 and body.
func TestEgressEchoMasked(t *testing.T) {
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkEgressEcho(t, v.engine, v.env()...) })
}

func checkEgressEcho(t *testing.T, name string, more ...string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		echoHandler(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	certFile := filepath.Join(dir, "host-ca.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	hp := strings.TrimPrefix(srv.URL, "https://")
	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, fmt.Sprintf(`{"network": {"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${ECHO_IT_TOKEN}"}]}}`, hp, hp))
	auditLog := filepath.Join(dir, "audit.jsonl")
	cs := connectBridge(t, name, append([]string{"MCP_BRIDGE_POLICY=" + policy, "MCP_BRIDGE_AUDIT_LOG=" + auditLog,
		"ECHO_IT_TOKEN=" + echoToken, "SSL_CERT_FILE=" + certFile}, more...)...)
	text, isErr := runPython(t, cs, map[string]any{"code": fmt.Sprintf(echoProbe, srv.URL), "timeout": 90})
	t.Logf("%s", text)
	mask := strings.Repeat("*", len("Bearer "+echoToken))
	echoed := fmt.Sprintf(`200 'you sent Authorization: %s\n' x-echo=%s length-ok=True`, mask, mask)
	for _, want := range []string{
		"echo " + echoed,
		"gzip " + echoed,
		"range " + echoed,
		"trace HTTPError 403 " + hp + ": TRACE is refused to a host the gateway adds a secret to",
		"track HTTPError 403 " + hp + ": TRACK is refused",
		"plain 200 'hello'",
	} {
		if isErr || !strings.Contains(text, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Contains(text, echoToken) || strings.Contains(text, echoToken[:len(echoToken)/2]) {
		t.Errorf("the token, or half of it, reached the sandbox:\n%s", text)
	}
	mu.Lock()
	for _, s := range seen {
		if !strings.HasPrefix(s, "GET ") || !strings.HasSuffix(s, " Bearer "+echoToken) {
			t.Errorf("the host saw %q: want GETs with the token only", s)
		}
	}
	mu.Unlock()
	data, _ := os.ReadFile(auditLog)
	if strings.Contains(string(data), echoToken) {
		t.Errorf("the audit log shows the token")
	}
	masked := 0
	for _, r := range readAudit(t, auditLog) {
		if r["event"] == "egress" && r["masked"] != nil {
			masked++
		}
	}
	if masked < 3 {
		t.Errorf("%d egress records count masks; want one per echoing request (3)", masked)
	}
}
