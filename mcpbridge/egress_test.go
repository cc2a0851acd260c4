package mcpbridge

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestEgressThroughTheBridge: sandbox code reaches a host the network
// policy allows with the standard library, the policy's header arriving
// at the host and not in the result; another host is refused with a 403
// naming it, why and the policy file; the audit log has both. (The local
// engine's sandbox inherits the host's environment, so that the secret
// stays out of a real sandbox's environment is the integration tests'.)
func TestEgressThroughTheBridge(t *testing.T) {
	t.Setenv("MCP_TEST_EGRESS_TOKEN", "bridge-s3cret")
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	}))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	cs, auditPath := policyBridge(t, fmt.Sprintf(`{"network": {"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${MCP_TEST_EGRESS_TOKEN}"}]}}`, hp, hp), nil)
	code := fmt.Sprintf(`import urllib.request, urllib.error
print(urllib.request.urlopen(%q, timeout=10).read().decode())
try:
    urllib.request.urlopen("http://127.0.0.2:9/nope", timeout=10)
except urllib.error.HTTPError as e:
    print("refused", e.code, e.reason)`, srv.URL+"/data")
	_, text, _ := call(t, cs, map[string]any{"code": code})
	for _, want := range []string{"hello from /data", "refused 403 127.0.0.2:9", "policy.json"} {
		if !strings.Contains(text, want) {
			t.Errorf("the call's output lacks %q:\n%s", want, text)
		}
	}
	if len(seen) != 1 || seen[0] != "Bearer bridge-s3cret" {
		t.Errorf("the host saw Authorization %q", seen)
	}
	var outcomes []string
	for _, rec := range auditRecords(t, auditPath) {
		if rec["event"] == "egress" {
			outcomes = append(outcomes, fmt.Sprint(rec["outcome"], " ", rec["host"]))
		}
	}
	// An allowed connection's record is written when it closes, a
	// refused one's at once: their order is not the calls' order.
	slices.Sort(outcomes)
	if strings.Join(outcomes, ",") != "allowed 127.0.0.1,denied 127.0.0.2" {
		t.Errorf("egress records: %q", outcomes)
	}
	if strings.Contains(text, "bridge-s3cret") {
		t.Errorf("the result shows the secret:\n%s", text)
	}
}

// TestEgressFloodKeepsCallsAnswered: code that opens 1,000 connections to
// its proxy at once gets at most max_connections through the gateway (the
// rest refused with 429, or closed at the runtime's bound), and the
// session's next call is answered as usual.
func TestEgressFloodKeepsCallsAnswered(t *testing.T) {
	cs, auditPath := policyBridge(t, `{"network": {"allow": ["127.0.0.1:9"], "max_connections": 16}}`, nil)
	code := `import os, socket
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
addr = (proxy[0].split("//")[1], int(proxy[1]))
socks, held, refused, closed = [], 0, 0, 0
for i in range(1000):
    try:
        s = socket.create_connection(addr, timeout=10)
        socks.append(s)
    except OSError:
        closed += 1
for s in socks:
    s.settimeout(2)
    try:
        first = s.recv(64)
    except socket.timeout:
        held += 1  # the gateway waits for its request
        continue
    except OSError:
        first = b""
    if first.startswith(b"HTTP/1.1 429"):
        refused += 1
    elif first.startswith(b"HTTP/1.1 400 reading the request"):
        held += 1  # held until the gateway stopped waiting for its request
    elif not first:
        closed += 1
    else:
        print("unexpected", first)
print("held", held, "refused", refused, "closed", closed)
for s in socks:
    s.close()`
	_, text, _ := call(t, cs, map[string]any{"code": code, "timeout": 120})
	var held, refused, closed int
	if _, err := fmt.Sscanf(text, "held %d refused %d closed %d", &held, &refused, &closed); err != nil {
		t.Fatalf("the flood's output: %q", text)
	}
	if held > 16 || held+refused+closed != 1000 || refused == 0 {
		t.Fatalf("held %d (at most 16), refused %d, closed %d of 1,000", held, refused, closed)
	}
	if _, text, _ := call(t, cs, map[string]any{"code": "print(6*7)"}); text != "42" {
		t.Fatalf("the next call: %q", text)
	}
	// Refusals are merged a second at a time: their counts add up.
	waitFor(t, "the refusals' records", func() bool { return refusalCounts(t, auditPath)["egress denied"] >= refused })
}
