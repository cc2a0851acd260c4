//go:build integration

package integration

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEgressGateway runs sandbox code on every engine that reaches, with
// the standard library and through the bridge's egress gateway, a plain
// HTTP host and an HTTPS host of this machine's loopback that the network
// policy allows, each with the operator's token added on the way out (the
// HTTPS one through the gateway's own TLS, its certificate trusted by the
// bridge through SSL_CERT_FILE); a host the policy does not allow is
// refused with a 403 naming it. Inside, the token is nowhere: not in the
// environment, the CA bundle or any file the runtime wrote.
func TestEgressGateway(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) { checkEgress(t, goClient(t, e.Name())) })
	if _, err := exec.LookPath("runsc"); err == nil && slices.Contains(engineNames(), "docker") {
		t.Run("docker+runsc", func(t *testing.T) { checkEgress(t, goClient(t, "docker", "MCP_BRIDGE_OCI_RUNTIME=runsc")) })
	}
	if slices.Contains(engineNames(), "docker") {
		// The remote engine: Docker at a TCP port over mutual TLS; the
		// gateway's bytes travel in the engine API's attached streams.
		t.Run("docker-tls", func(t *testing.T) {
			d := tlsDaemon(t)
			checkEgress(t, goClient(t, "docker", append(d.Env(), "HOME="+t.TempDir())...))
		})
		// The official TypeScript SDK's client drives the bridge.
		t.Run("docker/typescript-client", func(t *testing.T) {
			checkEgress(t, func(env []string, code string) (string, bool) {
				var res tsResult
				runNode(t, "client.mjs", append(env, "HOME="+t.TempDir(), "MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=WARN"),
					[]map[string]any{{"code": code}}, &res)
				if len(res.Results) != 1 {
					t.Fatalf("%d results for one call", len(res.Results))
				}
				return res.Results[0].Text, res.Results[0].IsError
			})
		})
	}
}

// tokenHosts serves handler over plain HTTP and HTTPS on loopback (closed
// when the test ends) and writes a policy allowing both, each with an
// Authorization header of ${tokenVar} added; it returns the servers, the
// HTTPS server's certificate in a PEM file (for the bridge's
// SSL_CERT_FILE) and the policy file.
func tokenHosts(t *testing.T, handler http.Handler, tokenVar string) (plain, secure *httptest.Server, certFile, policy string) {
	plain = httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	secure = httptest.NewTLSServer(handler)
	t.Cleanup(secure.Close)
	dir := t.TempDir()
	certFile = filepath.Join(dir, "host-ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	plainHP, secureHP := strings.TrimPrefix(plain.URL, "http://"), strings.TrimPrefix(secure.URL, "https://")
	policy = filepath.Join(dir, "policy.json")
	writeFile(t, policy, fmt.Sprintf(`{"network": {"allow": [%q, %q], "inject": [
		{"host": %q, "header": "Authorization", "value": "Bearer ${%s}"},
		{"host": %q, "header": "Authorization", "value": "Bearer ${%s}"}]}}`, plainHP, secureHP, plainHP, tokenVar, secureHP, tokenVar))
	return plain, secure, certFile, policy
}

// An egressRunner starts a bridge with env added to its environment and
// returns the text of one run_python call of code, and whether it is an
// error.
type egressRunner func(env []string, code string) (string, bool)

// goClient is an egressRunner driving the bridge on the engine called
// name, env added to the bridge's, with the go-sdk's client.
func goClient(t *testing.T, name string, env ...string) egressRunner {
	return func(more []string, code string) (string, bool) {
		cs := connectBridge(t, name, append(more, env...)...)
		return runPython(t, cs, map[string]any{"code": code})
	}
}

// checkEgress is TestEgressGateway with run.
func checkEgress(t *testing.T, run egressRunner) {
	var mu sync.Mutex
	var seen []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	})
	plain, secure, certFile, policy := tokenHosts(t, handler, "EGRESS_IT_TOKEN")
	auditLog := filepath.Join(filepath.Dir(policy), "audit.jsonl")
	env := []string{"MCP_BRIDGE_POLICY=" + policy, "MCP_BRIDGE_AUDIT_LOG=" + auditLog,
		"EGRESS_IT_TOKEN=it-s3cret-token", "SSL_CERT_FILE=" + certFile}
	code := fmt.Sprintf(`import os, urllib.request, urllib.error
print(urllib.request.urlopen(%q, timeout=20).read().decode())
print(urllib.request.urlopen(%q, timeout=20).read().decode())
try:
    urllib.request.urlopen("http://127.0.0.2:9/", timeout=20)
except urllib.error.HTTPError as e:
    print("refused", e.code, e.reason)
found = [k for k, v in os.environ.items() if "it-s3cret" in v]
for root, _, files in os.walk("/tmp"):
    for f in files:
        try:
            if b"it-s3cret" in open(os.path.join(root, f), "rb").read() or b"PRIVATE KEY" in open(os.path.join(root, f), "rb").read():
                found.append(os.path.join(root, f))
        except OSError:
            pass
print("found:", found)`, plain.URL+"/plain", secure.URL+"/secure")
	text, isErr := run(env, code)
	for _, want := range []string{"hello /plain", "hello /secure", "refused 403 127.0.0.2:9", "found: []"} {
		if isErr || !strings.Contains(text, want) {
			t.Errorf("the call's output lacks %q:\n%s", want, text)
		}
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	if got != "/plain Bearer it-s3cret-token,/secure Bearer it-s3cret-token" {
		t.Errorf("the hosts saw %q", got)
	}
	// The gateway writes a connection's record once it has answered it:
	// the call may have ended a moment before.
	var egress []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		egress = nil
		for _, r := range readAudit(t, auditLog) {
			if r["event"] == "egress" {
				egress = append(egress, fmt.Sprint(r["outcome"], " ", r["host"], ":", r["port"]))
			}
		}
		if len(egress) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(egress) != 3 {
		t.Errorf("egress records: %q", egress)
	}
	if data, _ := os.ReadFile(auditLog); strings.Contains(string(data), "it-s3cret") {
		t.Errorf("the audit log shows the token")
	}
}
