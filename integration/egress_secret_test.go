//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestEgressMissingSecret: a policy whose inject rule names a variable
// the bridge's environment lacks still works: that rule's host is refused
// with a 403 naming the variable (and sees nothing, not a request without
// its secret), an allowed host without a rule is reached, and proxied
// calls and discovery go on as before.
func TestEgressMissingSecret(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		var mu sync.Mutex
		var seen []string
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Host+r.URL.Path)
			mu.Unlock()
			fmt.Fprintf(w, "hello %s", r.URL.Path)
		})
		// Two hosts on loopback: the first with a rule naming an unset
		// variable, the second with none.
		plain, _, certFile, policy := tokenHosts(t, handler, "EGRESS_IT_NEVER_SET")
		other := httptest.NewServer(handler)
		t.Cleanup(other.Close)
		writeFile(t, policy, fmt.Sprintf(`{"network": {"allow": [%q, %q], "inject": [
			{"host": %q, "header": "Authorization", "value": "Bearer ${EGRESS_IT_NEVER_SET}"}]}}`,
			strings.TrimPrefix(plain.URL, "http://"), strings.TrimPrefix(other.URL, "http://"), strings.TrimPrefix(plain.URL, "http://")))
		home, _ := npmHome(t)
		cs := connectBridge(t, e.Name(), "MCP_BRIDGE_POLICY="+policy, "SSL_CERT_FILE="+certFile, "HOME="+home)
		text, isErr := runPython(t, cs, map[string]any{"servers": []string{"everything"}, "code": fmt.Sprintf(`import urllib.request, urllib.error
try:
    urllib.request.urlopen(%q, timeout=20)
except urllib.error.HTTPError as e:
    print("refused", e.code, e.read().decode(errors="replace"))
print(urllib.request.urlopen(%q, timeout=20).read().decode())
print(await mcp_everything.get_sum(a=2, b=3))`, plain.URL+"/secret", other.URL+"/open")})
		for _, want := range []string{"refused 403", "is disabled: the environment variable EGRESS_IT_NEVER_SET is not set", "hello /open", "5"} {
			if isErr || !strings.Contains(text, want) {
				t.Errorf("the call's output lacks %q:\n%s", want, text)
			}
		}
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if strings.Contains(got, "/secret") || !strings.Contains(got, "/open") {
			t.Errorf("the hosts saw %q: the disabled rule's host must see nothing", got)
		}
	})
}
