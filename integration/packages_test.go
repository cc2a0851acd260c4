//go:build integration

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A testIndex is a PEP 503 simple index on loopback serving the wheels
// the test built, counting the downloads of each.
type testIndex struct {
	*httptest.Server
	wheels    map[string][]byte // file name → wheel
	downloads sync32
}

type sync32 struct{ n atomic.Int32 }

// newTestIndex serves wheels (file name → content) under /simple/.
func newTestIndex(t *testing.T, wheels map[string][]byte) *testIndex {
	ix := &testIndex{wheels: wheels}
	ix.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
			if data, ok := ix.wheels[name]; ok {
				ix.downloads.n.Add(1)
				w.Write(data)
				return
			}
			http.NotFound(w, r)
			return
		}
		project, ok := strings.CutPrefix(r.URL.Path, "/simple/")
		project = strings.TrimSuffix(project, "/")
		if !ok || project == "" {
			http.NotFound(w, r)
			return
		}
		var links []string
		for name, data := range ix.wheels {
			if strings.HasPrefix(strings.ReplaceAll(strings.ToLower(name), "_", "-"), project+"-") {
				sum := sha256.Sum256(data)
				links = append(links, fmt.Sprintf(`<a href="/files/%s#sha256=%s">%s</a>`, name, hex.EncodeToString(sum[:]), name))
			}
		}
		if len(links) == 0 {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "<!DOCTYPE html><html><body>%s</body></html>", strings.Join(links, "\n"))
	}))
	t.Cleanup(ix.Close)
	return ix
}

// packageVolumes returns the names of the package volumes on the engine
// called name.
func packageVolumes(t *testing.T, name string) []string {
	t.Helper()
	out, err := exec.Command(name, "volume", "ls", "-q", "--filter", "label="+engine.LabelPackages).Output()
	if err != nil {
		t.Fatalf("%s volume ls: %v", name, err)
	}
	return strings.Fields(string(out))
}

// removeNewVolumes removes, when the test ends, the package volumes of
// the engine called name that are not in before.
func removeNewVolumes(t *testing.T, name string, before []string) {
	t.Cleanup(func() {
		for _, v := range packageVolumes(t, name) {
			if !slices.Contains(before, v) {
				exec.Command(name, "volume", "rm", "-f", v).Run()
			}
		}
	})
}

// TestPackageSet: with MCP_BRIDGE_PACKAGES naming a package of an index
// on loopback, the first call of a session imports it, in the minimal
// image that has no pip; a second bridge's session imports it too and
// the wheel was fetched once; the set is in two volumes of the engine (the
// data, read-only in the sandbox, and its marker); a package the index
// lacks fails the first call with an error naming it, and the session
// works once the set is fixed.
func TestPackageSet(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		before := packageVolumes(t, e.Name())
		removeNewVolumes(t, e.Name(), before)
		ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
		env := []string{"MCP_BRIDGE_PACKAGES=mcpegresstest", "MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"}
		code := `import mcpegresstest, os
print(mcpegresstest.VALUE, mcpegresstest.__file__.startswith("/opt/mcp-packages/site-"))
try:
    open(os.path.dirname(mcpegresstest.__file__) + "/x", "w")
except OSError as e:
    print(type(e).__name__)`
		for i := range 2 {
			cs := connectBridge(t, e.Name(), env...)
			if text, isErr := runPython(t, cs, map[string]any{"code": code, "timeout": 60}); isErr || text != "42 True\nOSError" {
				t.Fatalf("bridge %d: %q", i+1, text)
			}
			cs.Close()
		}
		if n := ix.downloads.n.Load(); n != 1 {
			t.Errorf("the wheel was fetched %d times, want once", n)
		}
		var made []string
		for _, v := range packageVolumes(t, e.Name()) {
			if !slices.Contains(before, v) {
				made = append(made, v)
			}
		}
		if len(made) != 2 {
			t.Errorf("package volumes made: %q, want the data and its marker", made)
		}

		bad := connectBridge(t, e.Name(), "MCP_BRIDGE_PACKAGES=mcpegresstest nosuchpkg>=1", "MCP_BRIDGE_PIP_INDEX_URL="+ix.URL+"/simple/")
		text, isErr := runPython(t, bad, map[string]any{"code": "print(1)"})
		if !isErr || !strings.Contains(text, "nosuchpkg") || !strings.Contains(text, "installing the package set failed") {
			t.Errorf("a set the index cannot satisfy: %q", text)
		}
	})
}
