//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A recordingIndex is a private PEP 503 index on loopback that wants a
// token, serves the test's wheel and pip's, and records the method, path
// and Authorization of every request (the bridge's own fetch of pip's
// wheel among them).
type recordingIndex struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecordingIndex(t *testing.T, token string) *recordingIndex {
	wheel, pip := testWheel(t), pipWheel(t)
	sum, pipSum := sha256.Sum256(wheel), sha256.Sum256(pip)
	ix := &recordingIndex{}
	ix.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ix.mu.Lock()
		ix.seen = append(ix.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		ix.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/simple/mcpegresstest/":
			fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/mcpegresstest-1.0-py3-none-any.whl#sha256=%s">mcpegresstest-1.0-py3-none-any.whl</a></body></html>`, hex.EncodeToString(sum[:]))
		case "/files/mcpegresstest-1.0-py3-none-any.whl":
			w.Write(wheel)
		case "/simple/pip/":
			fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%[1]s</a></body></html>`, pipWheelName, hex.EncodeToString(pipSum[:]))
		case "/files/" + pipWheelName:
			w.Write(pip)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ix.Close)
	return ix
}

func (ix *recordingIndex) requests() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]string{}, ix.seen...)
}

// installPathProbe is code that uses the sandbox's install endpoint as
// pip does, itself: %[1]q is the index's URL, %[2]q a host the network
// section allows. It prints one line per attempt: the status, or how the
// endpoint refused.
const installPathProbe = `import mcp_sandbox_runtime as rt, urllib.request, urllib.error
def via_install(method, url, data=None):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": rt.install_endpoint()}))
    try:
        r = opener.open(urllib.request.Request(url, data=data, method=method), timeout=20)
        return "%%d %%s" %% (r.status, r.read(200))
    except urllib.error.HTTPError as e:
        return "HTTPError %%d %%s" %% (e.code, e.reason)
    except Exception as e:
        return "closed %%s" %% type(e).__name__
def probe(tag):
    print(tag, "GET", via_install("GET", %[1]q + "/simple/mcpegresstest/"))
    print(tag, "POST", via_install("POST", %[1]q + "/upload", b"stolen"))
    print(tag, "PUT", via_install("PUT", %[1]q + "/files/x.whl", b"stolen"))
    print(tag, "ALLOWED", via_install("GET", %[2]q + "/"))
`

// TestPackagesInstallPath: the install endpoint lends the index's token
// to nothing but an install's GET and HEAD. pip installs from a private
// index (its token added by an inject rule) on every engine; code that
// opens the endpoint itself while an install is answered gets GET only
// (its POST and PUT refused with a 403 saying why, never reaching the
// index), no host the network section allows, and nothing at all once
// pip reported its end, once the call ended, or from code a call left
// running; the index saw only GETs, each with the token.
func TestPackagesInstallPath(t *testing.T) {
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkInstallPath(t, v.engine, v.env()...) })
}

func checkInstallPath(t *testing.T, name string, more ...string) {
	ix := newRecordingIndex(t, "it-index-token")
	var allowedHits sync.Map
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowedHits.Store(r.Method+" "+r.URL.Path, true)
		fmt.Fprint(w, "allowed host")
	}))
	t.Cleanup(allowed.Close)
	ixHP, allowedHP := strings.TrimPrefix(ix.URL, "http://"), strings.TrimPrefix(allowed.URL, "http://")
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, fmt.Sprintf(`{"network": {"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${PKG_IT_TOKEN}"}]}}`, allowedHP, ixHP))
	cs := connectBridge(t, name, append([]string{"MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/", "MCP_BRIDGE_POLICY=" + policy,
		"PKG_IT_TOKEN=it-index-token"}, more...)...)
	probe := fmt.Sprintf(installPathProbe, ix.URL, allowed.URL)
	steps := []struct {
		what, code string
		want, not  []string
	}{
		{"an install from the private index", "from mcp import runtime\nprint(runtime.install_sync('mcpegresstest'))\nimport mcpegresstest\nprint(mcpegresstest.VALUE)",
			[]string{"Successfully installed mcpegresstest-1.0", "42"}, nil},
		{"the endpoint while an install is answered", probe + `rt.rpc_sync({"type": "install", "requirements": ["mcpegresstest"], "have_wheel": True})
probe("open")`,
			[]string{"open GET 200", "open POST HTTPError 403 " + ixHP + ": POST is refused: package installs send the index's credentials with GET and HEAD only",
				"open PUT HTTPError 403 " + ixHP + ": PUT is refused", "open ALLOWED HTTPError 403 " + allowedHP},
			[]string{"open POST 2", "open PUT 2", "open ALLOWED 2"}},
		{"the endpoint after the call that opened it", probe + `probe("next call")`,
			[]string{"next call GET closed", "next call POST closed", "next call PUT closed"}, []string{"next call GET 2"}},
		{"the endpoint once pip reported its end", probe + `from mcp import runtime
try:
    runtime.install_sync("x")
except runtime.InstallError as e:
    print("InstallError", e)
probe("after pip")`,
			[]string{"InstallError installing x", "after pip GET closed", "after pip POST closed"}, []string{"after pip GET 2"}},
		{"code a call left running", probe + `import threading, time
result = []
def later():
    time.sleep(1)
    try:
        rt.rpc_sync({"type": "install", "requirements": ["mcpegresstest"], "have_wheel": True})
        result.append("answered")
    except Exception as e:
        result.append("refused: %s" % e)
    result.append(via_install("GET", ` + fmt.Sprintf("%q", ix.URL+"/simple/mcpegresstest/") + `))
threading.Thread(target=later, daemon=True).start()
print("started")`, []string{"started"}, nil},
		{"what it got", "time.sleep(3)\nprint(result)", []string{"refused: runtime.install runs within a run_python call", "closed"}, []string{"answered"}},
	}
	for _, step := range steps {
		text, isErr := runPython(t, cs, map[string]any{"code": step.code, "timeout": 120})
		t.Logf("%s:\n%s", step.what, text)
		for _, want := range step.want {
			if isErr || !strings.Contains(text, want) {
				t.Errorf("%s: the output lacks %q", step.what, want)
			}
		}
		for _, not := range step.not {
			if strings.Contains(text, not) {
				t.Errorf("%s: the output has %q", step.what, not)
			}
		}
		if strings.Contains(text, "it-index-token") {
			t.Errorf("%s: the token reached the sandbox", step.what)
		}
		if step.what == "code a call left running" {
			time.Sleep(2 * time.Second) // the thread asks between calls
		}
	}
	for _, r := range ix.requests() {
		if !strings.HasPrefix(r, "GET ") && !strings.HasPrefix(r, "HEAD ") {
			t.Errorf("the index received %q", r)
		}
		if !strings.HasSuffix(r, " Bearer it-index-token") {
			t.Errorf("the index received a request without the token: %q", r)
		}
	}
	allowedHits.Range(func(k, _ any) bool {
		t.Errorf("the allowed host was reached through the install endpoint: %v", k)
		return true
	})
}
