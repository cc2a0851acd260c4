package mcpbridge

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
	if strings.Join(outcomes, ",") != "allowed 127.0.0.1,denied 127.0.0.2" {
		t.Errorf("egress records: %q", outcomes)
	}
	if strings.Contains(text, "bridge-s3cret") {
		t.Errorf("the result shows the secret:\n%s", text)
	}
}
