//go:build integration

package integration

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// testWheel returns a pure-Python wheel of the package mcpegresstest 1.0
// (a module whose VALUE is 42).
func testWheel(t testing.TB) []byte {
	return buildWheel(t, "mcpegresstest", "py3-none-any", map[string][]byte{"mcpegresstest/__init__.py": []byte("VALUE = 42\n")})
}

// buildWheel returns a wheel of project name 1.0 for tag (py3-none-any:
// pure Python; another tag, platform code) holding files (path →
// content) besides its metadata, its RECORD with true hashes.
func buildWheel(t testing.TB, name, tag string, files map[string][]byte) []byte {
	t.Helper()
	info := name + "-1.0.dist-info/"
	purelib := strconv.FormatBool(tag == "py3-none-any")
	all := maps.Clone(files)
	all[info+"METADATA"] = []byte("Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n")
	all[info+"WHEEL"] = []byte("Wheel-Version: 1.0\nGenerator: integration\nRoot-Is-Purelib: " + purelib + "\nTag: " + tag + "\n")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, p := range slices.Sorted(maps.Keys(all)) {
		w, err := zw.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(all[p])
		sum := sha256.Sum256(all[p])
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", p, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[p]))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEgressClients runs the HTTP clients Python code really uses through
// the gateway, in the data image (which has them): requests and httpx
// reach a plain and an HTTPS host of this machine's loopback, the
// operator's token added on the way out and never inside, and are refused
// elsewhere with the gateway's 403; pip installs a package from a private
// HTTPS index (a PEP 503 simple index served by the test) whose token the
// bridge adds, trusting the bridge's CA through PIP_CERT.
func TestEgressClients(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		wheel := testWheel(t)
		sum := sha256.Sum256(wheel)
		var mu sync.Mutex
		var seen []string
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer it-index-token" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			switch r.URL.Path {
			case "/simple/mcpegresstest/":
				fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/mcpegresstest-1.0-py3-none-any.whl#sha256=%s">mcpegresstest-1.0-py3-none-any.whl</a></body></html>`,
					hex.EncodeToString(sum[:]))
			case "/files/mcpegresstest-1.0-py3-none-any.whl":
				w.Write(wheel)
			default:
				fmt.Fprintf(w, "hello %s", r.URL.Path)
			}
		})
		plain, secure, certFile, policy := tokenHosts(t, handler, "EGRESS_IT_TOKEN")
		cs := connectBridge(t, e.Name(), "MCP_BRIDGE_IMAGE="+dataImage(), "MCP_BRIDGE_POLICY="+policy,
			"EGRESS_IT_TOKEN=it-index-token", "SSL_CERT_FILE="+certFile)
		code := fmt.Sprintf(`import os, subprocess, sys, requests, httpx
plain, secure = %q, %q
print("requests", requests.get(plain + "/r", timeout=20).text, requests.get(secure + "/r", timeout=20).text)
r = requests.get("http://127.0.0.2:9/", timeout=20)
print("requests refused", r.status_code, r.reason)
with httpx.Client(timeout=20) as c:
    print("httpx", c.get(plain + "/x").text, c.get(secure + "/x").text)
    r = c.get("http://127.0.0.2:9/")
    print("httpx refused", r.status_code, r.reason_phrase)
p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
    "--index-url", secure + "/simple/", "--target", "/tmp/pkgs", "mcpegresstest"], capture_output=True, text=True, timeout=120)
if p.returncode:
    print("pip failed", p.returncode, p.stdout, p.stderr)
sys.path.insert(0, "/tmp/pkgs")
import mcpegresstest
print("pip", mcpegresstest.VALUE)
print("token inside:", [k for k, v in os.environ.items() if "it-index-token" in v])`, plain.URL, secure.URL)
		text, isErr := runPython(t, cs, map[string]any{"code": code, "timeout": 150})
		for _, want := range []string{
			"requests hello /r hello /r",
			"requests refused 403 127.0.0.2:9: 127.0.0.2 is a loopback address",
			"httpx hello /x hello /x",
			"httpx refused 403 127.0.0.2:9: 127.0.0.2 is a loopback address",
			"pip 42",
			"token inside: []",
		} {
			if isErr || !strings.Contains(text, want) {
				t.Errorf("the call's output lacks %q:\n%s", want, text)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if !strings.HasSuffix(s, " Bearer it-index-token") {
				t.Errorf("a request reached the host without the token: %q", s)
			}
		}
		if joined := strings.Join(seen, ","); !strings.Contains(joined, "/simple/mcpegresstest/") || !strings.Contains(joined, "/files/mcpegresstest-1.0-py3-none-any.whl") {
			t.Errorf("pip's requests: %s", joined)
		}
	})
}
