//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A testIndex is a PEP 503 simple index on loopback serving the wheels
// the test built and pip's (pipWheel), counting the downloads of each.
type testIndex struct {
	*httptest.Server
	wheels    map[string][]byte // file name → wheel
	downloads atomic.Int32      // of the test's wheels
	pips      atomic.Int32      // of pip's
}

// pipWheelName is the pip wheel the bridge pins, which the test indexes
// serve as PyPI does.
const pipWheelName = "pip-26.0.1-py3-none-any.whl"

// pipWheel returns pip's wheel as PyPI serves it (testdata/pip).
func pipWheel(t testing.TB) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", "pip", pipWheelName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// newTestIndex serves wheels (file name → content) and pip's under
// /simple/.
func newTestIndex(t testing.TB, wheels map[string][]byte) *testIndex {
	ix := &testIndex{wheels: maps.Clone(wheels)}
	ix.wheels[pipWheelName] = pipWheel(t)
	ix.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
			if data, ok := ix.wheels[name]; ok {
				if name == pipWheelName {
					ix.pips.Add(1)
				} else {
					ix.downloads.Add(1)
				}
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
func packageVolumes(t testing.TB, name string) []string {
	t.Helper()
	out, err := exec.Command(name, "volume", "ls", "-q", "--filter", "label="+engine.LabelPackages).Output()
	if err != nil {
		t.Fatalf("%s volume ls: %v", name, err)
	}
	return strings.Fields(string(out))
}

// packageVolumeLocks holds, per engine, the package volumes for one test
// at a time: the volumes are the engine's, not a test's (Docker under
// gVisor shares Docker's), and a test that counts or removes what it made
// must not see another's.
var packageVolumeLocks sync.Map // engine name → *sync.Mutex

// takePackageVolumes gives the test the package volumes of the engine
// called name until it ends: it waits for any other test holding them,
// and returns those there now; what the test adds is removed when it
// ends.
func takePackageVolumes(t testing.TB, name string) []string {
	t.Helper()
	mu, _ := packageVolumeLocks.LoadOrStore(name, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	t.Cleanup(mu.(*sync.Mutex).Unlock)
	before := packageVolumes(t, name)
	removeNewVolumes(t, name, before)
	return before
}

// removeNewVolumes removes, when the test ends, the package volumes of
// the engine called name that are not in before (the caller holds them:
// takePackageVolumes).
func removeNewVolumes(t testing.TB, name string, before []string) {
	t.Cleanup(func() {
		for _, v := range packageVolumes(t, name) {
			if slices.Contains(before, v) {
				continue
			}
			// A container removed a moment ago may still hold it.
			for try := 0; ; try++ {
				out, err := exec.Command(name, "volume", "rm", "-f", v).CombinedOutput()
				if err == nil {
					break
				}
				if try == 20 {
					t.Logf("leaving package volume %s on %s: %v %s", v, name, err, out)
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	})
}

// TestPackageSet: with MCP_BRIDGE_PACKAGES naming a package of an index
// on loopback, the first call of a session imports it, in the minimal
// image that has no pip; a second bridge's session imports it too and
// the wheel was fetched once; the set is in volumes of the engine (the
// data, read-only in the sandbox, its marker, and the day it was used); a package the index
// lacks fails the first call with an error naming it, and the session
// works once the set is fixed.
func TestPackageSet(t *testing.T) {
	t.Parallel()
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkPackageSet(t, v.engine, v.env()...) })
}

// checkPackageSet is TestPackageSet on the engine called name, with more
// added to the bridge's environment.
func checkPackageSet(t *testing.T, name string, more ...string) {
	before := takePackageVolumes(t, name)
	ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
	env := append([]string{"MCP_BRIDGE_PACKAGES=mcpegresstest", "MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"}, more...)
	code := `import mcpegresstest, os
print(mcpegresstest.VALUE, mcpegresstest.__file__.startswith("/opt/mcp-packages/site-"))
try:
    open(os.path.dirname(mcpegresstest.__file__) + "/x", "w")
except OSError as e:
    print(type(e).__name__)`
	for i := range 2 {
		cs := connectBridge(t, name, env...)
		if text, isErr := runPython(t, cs, map[string]any{"code": code, "timeout": 60}); isErr || text != "42 True\nOSError" {
			t.Fatalf("bridge %d: %q", i+1, text)
		}
		cs.Close()
	}
	if n := ix.downloads.Load(); n != 1 {
		t.Errorf("the wheel was fetched %d times, want once", n)
	}
	var made []string
	for _, v := range packageVolumes(t, name) {
		if !slices.Contains(before, v) {
			made = append(made, v)
		}
	}
	if len(made) != 3 {
		t.Errorf("package volumes made: %q, want the data, its marker and today's use", made)
	}

	bad := connectBridge(t, name, append([]string{"MCP_BRIDGE_PACKAGES=mcpegresstest nosuchpkg>=1", "MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"}, more...)...)
	text, isErr := runPython(t, bad, map[string]any{"code": "print(1)"})
	if !isErr || !strings.Contains(text, "nosuchpkg") || !strings.Contains(text, "installing the package set failed") {
		t.Errorf("a set the index cannot satisfy: %q", text)
	}
}

// TestLiveInstall: runtime.install puts a package of a loopback index in
// the session's own /opt/mcp-site (a tmpfs with exec, nosuid, nodev) in
// the minimal image that has no pip, importable on the next line with the
// session's state kept; a missing package, and a requirement that is a
// pip option, raise InstallError naming them; the install endpoint, which
// code could use too, reaches the indexes only.
func TestLiveInstall(t *testing.T) {
	t.Parallel()
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkLiveInstall(t, v.engine, v.env()...) })
	if slices.Contains(engineNames(), "docker") {
		// The official TypeScript SDK's client drives the same.
		t.Run("docker/typescript-client", func(t *testing.T) {
			ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
			var res tsResult
			runNode(t, "client.mjs", []string{"HOME=" + t.TempDir(), "MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=WARN",
				"MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"}, []map[string]any{
				{"code": "from mcp import runtime\nprint(await runtime.install('mcpegresstest'))", "timeout": 120},
				{"code": "import mcpegresstest\nprint(mcpegresstest.VALUE)"},
			}, &res)
			if len(res.Results) != 2 || !strings.Contains(res.Results[0].Text, "Successfully installed mcpegresstest-1.0") || res.Results[1].Text != "42" {
				t.Fatalf("through the TypeScript client: %+v", res.Results)
			}
		})
	}
}

// checkLiveInstall is TestLiveInstall on the engine called name, with
// more added to the bridge's environment.
func checkLiveInstall(t *testing.T, name string, more ...string) {
	ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
	cs := connectBridge(t, name, append([]string{"MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"}, more...)...)
	for _, step := range []struct{ code, want string }{
		{"x = 5\nfrom mcp import runtime", ""},
		// Before any install the install endpoint serves nothing, not
		// even the index.
		{fmt.Sprintf(`import mcp_sandbox_runtime as rt, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": rt.install_endpoint()}))
try:
    opener.open(%q, timeout=20)
    print("reached the index")
except Exception as e:
    print("closed:", type(e).__name__)`, ix.URL+"/simple/mcpegresstest/"), "closed: "},
		{"print(await runtime.install('mcpegresstest'))", "Successfully installed mcpegresstest-1.0"},
		{"import mcpegresstest\nprint(mcpegresstest.VALUE + x, mcpegresstest.__file__)", "47 /opt/mcp-site/mcpegresstest/__init__.py"},
		{"try:\n    runtime.install_sync('nosuchpkg>=2')\nexcept runtime.InstallError as e:\n    print(type(e).__name__, isinstance(e, MCPError), e)",
			"InstallError True installing nosuchpkg>=2: pip exited with 1: "},
		{"try:\n    await runtime.install('--index-url=http://127.0.0.1:9/simple/')\nexcept runtime.InstallError as e:\n    print(e)",
			"pip options are not allowed"},
		// Open while an install is answered, it reaches the index hosts
		// only.
		{`import mcp_sandbox_runtime as rt, urllib.request, urllib.error
rt.rpc_sync({"type": "install", "requirements": ["mcpegresstest"], "have_wheel": True})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": rt.install_endpoint()}))
try:
    opener.open("http://127.0.0.2:9/", timeout=20)
except urllib.error.HTTPError as e:
    print(e.code)
print([l.split()[3] for l in open("/proc/mounts") if l.split()[1] == "/opt/mcp-site"])`, "403\n"},
		{"print(x)", "5"},
	} {
		text, isErr := runPython(t, cs, map[string]any{"code": step.code, "timeout": 120})
		if isErr || !strings.Contains(text, step.want) {
			t.Fatalf("%q: %q (isError %v), want %q", step.code, text, isErr, step.want)
		}
		// (gVisor's /proc/mounts lists neither nosuid nor nodev for its
		// tmpfs mounts, whose flags its Sentry keeps.)
		if strings.Contains(step.code, "/proc/mounts") && len(more) == 0 {
			for _, want := range []string{"nosuid", "nodev"} {
				if !strings.Contains(text, want) || strings.Contains(text, "noexec") {
					t.Errorf("/opt/mcp-site is mounted %s; want exec, nosuid, nodev", text)
				}
			}
		}
	}
}

// wheelWith returns a pure-Python wheel of project name 1.0 holding
// files (path → content) besides its metadata.
func wheelWith(t *testing.T, name string, files map[string][]byte) []byte {
	return buildWheel(t, name, "py3-none-any", files)
}

// TestPackagesHostile: what runtime.install refuses or survives, the
// session's state kept throughout: a wheel with a path that escapes its
// directory (nothing written outside), a wheel bigger than the session's
// install space, 200 requirements at once (and 501, refused by the
// bridge), an index that answers garbage, a package that runs code at
// import, an index that answers slowly.
func TestPackagesHostile(t *testing.T) {
	t.Parallel()
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkPackagesHostile(t, v.engine, v.env()...) })
}

// sneakyInit is a package's __init__ that runs code at import: it is
// contained like any code (the sandbox's user, no raw sockets, a
// read-only root).
const sneakyInit = `import os, socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    RAW = "created"
except OSError as e:
    RAW = type(e).__name__
try:
    open("/usr/lib/sneaky", "w")
    ROOT = "written"
except OSError:
    ROOT = "refused"  # EROFS under runc, EACCES under gVisor
UID = os.getuid()
`

// checkPackagesHostile is TestPackagesHostile on the engine called name,
// with more added to the bridge's environment.
func checkPackagesHostile(t *testing.T, name string, more ...string) {
	noise := make([]byte, 3<<20)
	rand.Read(noise) // incompressible: 3 MiB on the tmpfs
	ix := newTestIndex(t, map[string][]byte{
		"escaper-1.0-py3-none-any.whl": wheelWith(t, "escaper", map[string][]byte{
			"escaper/__init__.py": []byte("X = 1\n"), "../../tmp/escaped.py": []byte("ESCAPED = True\n")}),
		"bigpkg-1.0-py3-none-any.whl": wheelWith(t, "bigpkg", map[string][]byte{"bigpkg/__init__.py": []byte(""), "bigpkg/blob.bin": noise}),
		"sneaky-1.0-py3-none-any.whl": wheelWith(t, "sneaky", map[string][]byte{"sneaky/__init__.py": []byte(sneakyInit)}),
	})
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("\x00\xff<html><a href=\"/../../../etc/passwd\">x</a><<<"))
	}))
	t.Cleanup(garbage.Close)
	cs := connectBridge(t, name, append([]string{"MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/", "MCP_BRIDGE_PACKAGES_SESSION_MAX=2m",
		"MCP_BRIDGE_PIP_EXTRA_INDEX_URL=" + garbage.URL + "/simple/"}, more...)...)
	try := func(expr string) string {
		return fmt.Sprintf("try:\n    print(%s)\nexcept runtime.InstallError as e:\n    print('InstallError:', e)", expr)
	}
	for _, step := range []struct{ code, want string }{
		{"state = 'kept'\nfrom mcp import runtime\nimport os", ""},
		{try("runtime.install_sync('escaper')") + "\nprint(os.path.exists('/tmp/escaped.py'))", "InstallError: installing escaper: pip exited with 1"},
		{"print(os.path.exists('/tmp/escaped.py'))", "False"},
		{try("runtime.install_sync('bigpkg')"), "is full"},
		{try("runtime.install_sync(*['nosuch%d' % i for i in range(200)])"), "InstallError: installing nosuch0"},
		{try("runtime.install_sync(*['p%d' % i for i in range(501)])"), "at most 500 requirements"},
		{"runtime.install_sync('sneaky')\nimport sneaky\nprint(sneaky.UID, sneaky.RAW, sneaky.ROOT)", "65534 PermissionError refused"},
		{"print(state)", "kept"},
	} {
		text, isErr := runPython(t, cs, map[string]any{"code": step.code, "timeout": 120})
		if isErr || !strings.Contains(text, step.want) {
			t.Errorf("%.60q: %q (isError %v), want %q", step.code, text, isErr, step.want)
		}
		t.Logf("%.50q: %.300s", step.code, text)
	}
	// An index that answers slowly (2 s a request): the install waits
	// for it and succeeds.
	fast := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Second)
		fast.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	cs = connectBridge(t, name, append([]string{"MCP_BRIDGE_PIP_INDEX_URL=" + slow.URL + "/simple/"}, more...)...)
	if text, isErr := runPython(t, cs, map[string]any{"code": "from mcp import runtime\nruntime.install_sync('mcpegresstest')\nimport mcpegresstest\nprint(mcpegresstest.VALUE)", "timeout": 120}); isErr || text != "42" {
		t.Errorf("from a slow index: %q", text)
	}
}

// TestDoctorPackages: doctor makes a set ready as a session would (an
// install the first time) and says so; a set the index cannot satisfy
// fails the check with pip's error naming the requirement.
func TestDoctorPackages(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		takePackageVolumes(t, e.Name())
		ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
		env := []string{"HOME=" + t.TempDir(), "MCP_BRIDGE_RUNTIME=" + e.Name(), "MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"}
		out, _, _, _ := runDoctorCLI(t, append(env, "MCP_BRIDGE_PACKAGES=mcpegresstest"), "--json")
		if c := byCheck(t, out)["packages"]; len(c) != 1 || c[0].Status != "ok" || !strings.Contains(c[0].Detail, "1 requirements ready") {
			t.Errorf("a set: %+v", c)
		}
		out, _, code, _ := runDoctorCLI(t, append(env, "MCP_BRIDGE_PACKAGES=nosuchpkg"), "--json")
		if c := byCheck(t, out)["packages"]; code == 0 || len(c) != 1 || c[0].Status != "fail" || !strings.Contains(c[0].Detail, "No matching distribution found for nosuchpkg") {
			t.Errorf("a bad set (exit %d): %+v", code, c)
		}
	})
}

// TestTLSPackages: through the remote engine (Docker at a TCP port over
// mutual TLS), a set is installed into a volume of that engine and
// imported, and runtime.install works: nothing is bind-mounted from the
// bridge's host.
func TestTLSPackages(t *testing.T) {
	t.Parallel()
	if !slices.Contains(engineNames(), "docker") {
		t.Skip("the TLS daemon is a Docker daemon")
	}
	d := tlsDaemon(t)
	ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
	cs := connectBridge(t, "docker", append(d.Env(), "HOME="+t.TempDir(), "MCP_BRIDGE_PACKAGES=mcpegresstest",
		"MCP_BRIDGE_PIP_INDEX_URL="+ix.URL+"/simple/")...)
	code := "import mcpegresstest\nfrom mcp import runtime\nprint(mcpegresstest.VALUE, runtime.install_sync('mcpegresstest').startswith('Successfully installed'))"
	if text, isErr := runPython(t, cs, map[string]any{"code": code, "timeout": 120}); isErr || text != "42 True" {
		t.Fatalf("on the TLS daemon: %q", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := d.Client(t).VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", engine.LabelPackages))})
	if err != nil || len(list.Volumes) < 2 {
		t.Fatalf("package volumes on the TLS daemon: %v %v", list.Volumes, err)
	}
}

// TestPackageSetHashes: a requirements file's --hash is honoured: the
// wheel whose hash it names installs, another hash fails the set with
// pip's hash error.
func TestPackageSetHashes(t *testing.T) {
	t.Parallel()
	name := engineNames()[0]
	takePackageVolumes(t, name)
	wheel := testWheel(t)
	sum := sha256.Sum256(wheel)
	ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": wheel})
	dir := t.TempDir()
	for _, tt := range []struct{ hash, want string }{
		{hex.EncodeToString(sum[:]), "42"},
		{strings.Repeat("0", 64), "DO NOT MATCH THE HASHES"},
	} {
		file := filepath.Join(dir, tt.hash[:8]+".txt")
		writeFile(t, file, "mcpegresstest==1.0 \\\n    --hash=sha256:"+tt.hash+"\n")
		cs := connectBridge(t, name, "MCP_BRIDGE_PACKAGES_FILE="+file, "MCP_BRIDGE_PIP_INDEX_URL="+ix.URL+"/simple/")
		text, _ := runPython(t, cs, map[string]any{"code": "import mcpegresstest\nprint(mcpegresstest.VALUE)", "timeout": 90})
		if !strings.Contains(text, tt.want) {
			t.Errorf("hash %s…: %q, want %q", tt.hash[:8], text, tt.want)
		}
	}
}
