//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// kubeFailure runs `exec` and a `serve` bridge's first call with env
// added (a broken Kubernetes setting) and checks that both fail with one
// clear message holding every string of want: exec exits 125 with one
// line, serve answers the call with an error. It returns exec's line.
func kubeFailure(t *testing.T, env []string, want ...string) string {
	t.Helper()
	env = append([]string{"MCP_BRIDGE_RUNTIME=kubernetes", "HOME=" + t.TempDir(), "MCP_BRIDGE_POOL_SIZE=0"}, env...)
	stdout, stderr, code := runCLIWithin(t, 2*time.Minute, env, "exec", "-c", "print(1)")
	msg := strings.TrimSpace(stderr)
	ok := code == 125 && stdout == "" && !strings.Contains(msg, "\n") && !strings.Contains(msg, "panic")
	for _, w := range want {
		ok = ok && strings.Contains(msg, w)
	}
	if !ok {
		t.Errorf("exec: code %d, stdout %q, stderr %q; want 125 and one line saying %q", code, stdout, stderr, want)
	}
	// serve starts (the engine is connected at the first call) and
	// answers the call with the same reason.
	b := startHTTPBridge(t, connect(t, engine.BackendKubernetes), httpOpts{env: env})
	text, isErr := callText(b.session(t, nil), "print(1)")
	for _, w := range want {
		if !isErr || !strings.Contains(text, w) {
			t.Errorf("serve's first call: isError %v, %q; want %q", isErr, text, w)
		}
	}
	return msg
}

// TestKubeBadKubeconfig: a KUBECONFIG naming a file that does not exist,
// one that is not YAML, an empty one and one that cannot be read (a
// directory) are reported by exec (exit 125, one line) and by serve's
// first call, naming the file and why.
func TestKubeBadKubeconfig(t *testing.T) {
	kubeRequired(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.kubeconfig")
	writeFile(t, garbage, "apiVersion: v1\nclusters: {{{ not yaml\n")
	empty := filepath.Join(dir, "empty.kubeconfig")
	writeFile(t, empty, "")
	// A file mode does not stop root: a directory cannot be read as a
	// file by anyone.
	unreadable := filepath.Join(dir, "dir.kubeconfig")
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		want       []string
	}{
		{"missing", filepath.Join(dir, "no-such.kubeconfig"), []string{"does not exist"}},
		{"garbage", garbage, []string{"yaml"}},
		{"empty", empty, []string{"no configuration"}},
		{"unreadable", unreadable, []string{"is a directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := kubeFailure(t, []string{"KUBECONFIG=" + c.path}, append([]string{c.path, "kubernetes"}, c.want...)...)
			t.Log(msg)
		})
	}
}

// TestKubeNamespaceRefused: a namespace that does not exist, and one in
// which RBAC gives the bridge's identity no rights (default), are
// reported by exec and serve's first call naming the namespace, the verb
// and the resource refused, before any pod is made. To an identity
// without rights there, a namespace that does not exist is refused as
// well (the API server authorizes before it looks): the message says it
// may not exist; with the cluster's admin identity, that it does not.
func TestKubeNamespaceRefused(t *testing.T) {
	kubeRequired(t)
	admin := filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "admin.kubeconfig")
	if _, err := os.Stat(admin); err != nil {
		t.Fatalf("the admin kubeconfig scripts/provision-kubernetes writes beside KUBECONFIG: %v", err)
	}
	for _, c := range []struct {
		name string
		env  []string
		want []string
	}{
		{"forbidden", []string{"MCP_BRIDGE_K8S_NAMESPACE=default"},
			[]string{`list pods in namespace "default"`, "forbidden", "RBAC", `User "mcp-bridge"`}},
		{"missing", []string{"MCP_BRIDGE_K8S_NAMESPACE=mcp-no-such-ns"},
			[]string{`list pods in namespace "mcp-no-such-ns"`, "forbidden", "may not exist"}},
		{"missing/admin", []string{"MCP_BRIDGE_K8S_NAMESPACE=mcp-no-such-ns", "KUBECONFIG=" + admin},
			[]string{`namespace "mcp-no-such-ns" does not exist`, "MCP_BRIDGE_K8S_NAMESPACE"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Log(kubeFailure(t, c.env, c.want...))
		})
	}
}

// TestKubeConcurrentSessions: 20 sessions opened at once on one serve
// bridge, each on a pod of its own, keep their own state (x = i, then
// print(x)); every call is answered, and once the sessions close their
// pods are deleted.
func TestKubeConcurrentSessions(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, gvisor bool) {
		const n = 20
		b := startHTTPBridge(t, e, httpOpts{env: append(env, fmt.Sprintf("MCP_BRIDGE_MAX_SESSIONS=%d", n+4))})
		began := time.Now()
		var wg sync.WaitGroup
		hosts := make([]string, n)
		var mu sync.Mutex
		var sessions []interface{ Close() error }
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs, err := b.dial(b.token, nil)
				if err != nil {
					t.Errorf("session %d: connecting: %v", i, err)
					return
				}
				mu.Lock()
				sessions = append(sessions, cs)
				mu.Unlock()
				if text, isErr := callText(cs, fmt.Sprintf("import socket\nx = %d\nprint(socket.gethostname())", i)); isErr {
					t.Errorf("session %d, first call: %q", i, text)
					return
				} else {
					hosts[i] = text
				}
				if text, isErr := callText(cs, "print(x)"); isErr || text != fmt.Sprint(i) {
					t.Errorf("session %d, second call: %v %q, want its own x", i, isErr, text)
				}
			}()
		}
		wg.Wait()
		took := time.Since(began)
		pods := b.containers(t)
		t.Logf("%d sessions at once, two calls each, on %d pods: %v", n, len(pods), took.Round(time.Millisecond))
		seen := map[string]bool{}
		for i, h := range hosts {
			if h == "" || seen[h] || !b.has(t, h) {
				t.Errorf("session %d ran on %q: not a pod of its own of this bridge (%d pods)", i, h, len(pods))
			}
			seen[h] = true
		}
		if len(pods) != n {
			t.Errorf("%d pods for %d sessions", len(pods), n)
		}
		closed := time.Now()
		for _, cs := range sessions {
			cs.Close()
		}
		waitFor(t, 2*time.Minute, "the closed sessions' pods deleted", func() bool { return len(b.containers(t)) == 0 })
		t.Logf("their pods deleted %v after the sessions closed", time.Since(closed).Round(time.Millisecond))
	})
}
