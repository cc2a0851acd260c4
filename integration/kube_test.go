//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// kubeRequired reports whether the Kubernetes tests must run: scripts/test
// sets MCP_TEST_KUBERNETES=1 once `scripts/provision --kubernetes` has
// brought the cluster up (its exports: KUBECONFIG, MCP_BRIDGE_K8S_NAMESPACE).
// Elsewhere they are skipped.
func kubeRequired(t *testing.T) {
	t.Helper()
	if os.Getenv("MCP_TEST_KUBERNETES") != "1" {
		t.Skip("MCP_TEST_KUBERNETES is not 1 (scripts/test sets it after scripts/provision --kubernetes)")
	}
	if os.Getenv("KUBECONFIG") == "" {
		t.Fatal("MCP_TEST_KUBERNETES=1 without KUBECONFIG: eval the exports of scripts/provision --kubernetes")
	}
}

// kubeProbe reports, from inside a sandbox, what its hardening rests on.
const kubeProbe = `import json, os
st = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    st[k] = v.strip()
# Routes through a gateway, or the default route: a way out (a route to
# the pod's own subnet is not).
routes = [l.split()[0] + ":" + l.split()[1] + ">" + l.split()[2] for l in open("/proc/net/route").read().splitlines()[1:]
          if l.split()[1] == "00000000" or l.split()[2] != "00000000"]
# /var/tmp is world-writable in the image: only a read-only root refuses.
root_ro = False
try:
    open("/var/tmp/probe", "w")
except OSError as e:
    root_ro = e.errno == 30
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "CapEff": st["CapEff"], "CapBnd": st["CapBnd"],
    "NoNewPrivs": st.get("NoNewPrivs", ""), "Seccomp": st.get("Seccomp"), "routes": routes, "root_ro": root_ro,
    "token": os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token"), "env": sorted(os.environ)}))`

// TestKubeSessions: on pods, a session keeps its state, is hardened as on
// the other engines (seen from inside), interrupts a call at its timeout
// and keeps its state, and returns files out.
func TestKubeSessions(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, gvisor bool) {
		b := startHTTPBridge(t, e, httpOpts{env: env})
		cs := b.session(t, nil)
		if text, isErr := callText(cs, "x = 41\nprint('set')"); isErr || text != "set" {
			t.Fatalf("first call: %v %q", isErr, text)
		}
		if text, isErr := callText(cs, "x += 1\nprint(x)"); isErr || text != "42" {
			t.Fatalf("state: %v %q", isErr, text)
		}
		text, isErr := callText(cs, kubeProbe)
		var p struct {
			UID, GID, PID       int
			CapEff, CapBnd      string
			NoNewPrivs, Seccomp string
			Routes              []string
			RootRO              bool `json:"root_ro"`
			Token               bool
			Env                 []string
		}
		if err := json.Unmarshal([]byte(text), &p); isErr || err != nil {
			t.Fatalf("probe: %v %q %v", isErr, text, err)
		}
		if p.UID != 65534 || p.GID != 65534 || p.CapEff != "0000000000000000" || p.CapBnd != "0000000000000000" ||
			p.NoNewPrivs != "1" && !(gvisor && p.NoNewPrivs == "") || !p.RootRO || p.Token || len(p.Routes) != 0 || slices.ContainsFunc(p.Env, func(k string) bool { return strings.HasPrefix(k, "KUBERNETES_") }) {
			t.Fatalf("the sandbox pod from inside: %+v", p)
		}
		t.Logf("from inside: pid %d, seccomp %s, env %v", p.PID, p.Seccomp, p.Env)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "import time\ny = 'kept'\ntime.sleep(30)", "timeout": 2}})
		if err != nil || !res.IsError {
			t.Fatalf("a call past its timeout: %v %+v", err, res)
		}
		if text, isErr := callText(cs, "print(y, x)"); isErr || text != "kept 42" {
			t.Fatalf("after the timeout: %v %q", isErr, text)
		}
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "open('/workspace/out/table.csv', 'w').write('a,b\\n1,2\\n')\nprint('wrote')"}})
		if err != nil || res.IsError {
			t.Fatalf("a file out: %v %+v", err, res)
		}
		var uri string
		for _, c := range res.Content {
			if l, ok := c.(*mcp.ResourceLink); ok {
				uri = l.URI
			}
			if r, ok := c.(*mcp.EmbeddedResource); ok && r.Resource != nil {
				uri = r.Resource.URI
			}
		}
		if uri == "" {
			t.Fatalf("no resource for the file out: %+v", res.Content)
		}
		got, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "a,b\n1,2\n" {
			t.Fatalf("reading %s: %v %+v", uri, err, got)
		}
	})
}

// TestKubePodDeleted: a pod deleted under a session is replaced at the
// next call, whose notice says the state is gone, within seconds.
func TestKubePodDeleted(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, _ bool) {
		b := startHTTPBridge(t, e, httpOpts{env: env})
		cs := b.session(t, nil)
		callText(cs, "x = 1")
		pods := b.containers(t)
		if len(pods) != 1 {
			t.Fatalf("%d pods, want 1", len(pods))
		}
		out, err := exec.Command("kubectl", "delete", "pod", "--wait=true", "--timeout=60s", pods[0].ID).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl delete: %v %s", err, out)
		}
		// The API object is gone at once; the kubelet kills the
		// container a moment later, which ends its stream.
		time.Sleep(3 * time.Second)
		began := time.Now()
		text, _ := callText(cs, "print('again')")
		if !strings.Contains(text, "again") || !strings.Contains(text, "new sandbox") || !strings.Contains(text, "deleted") || time.Since(began) > 20*time.Second {
			t.Fatalf("the call after the pod was deleted (%v): %q", time.Since(began), text)
		}
		t.Logf("replaced in %v", time.Since(began))
	})
}

// TestKubePodEvicted: a pod evicted through the Eviction API (as a node's
// drain does) under a session is replaced at the next call, whose notice
// says it was evicted. The eviction is the cluster administrator's: the
// bridge's identity may not evict.
func TestKubePodEvicted(t *testing.T) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=0"}})
	cs := b.session(t, nil)
	callText(cs, "x = 1")
	pods := b.containers(t)
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	ns, name := os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"), pods[0].ID
	admin := filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "admin.kubeconfig")
	evict := exec.Command("kubectl", "--kubeconfig", admin, "create", "--raw",
		"/api/v1/namespaces/"+ns+"/pods/"+name+"/eviction", "-f", "-")
	evict.Stdin = strings.NewReader(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`)
	if out, err := evict.CombinedOutput(); err != nil {
		t.Fatalf("evicting pod %s: %v %s", name, err, out)
	}
	// The eviction deletes the pod (its container is killed a moment
	// later); the bridge lets go of it as soon as it sees that.
	if out, err := exec.Command("kubectl", "wait", "--for=delete", "--timeout=60s", "pod/"+name).CombinedOutput(); err != nil {
		t.Fatalf("waiting for pod %s to go: %v %s", name, err, out)
	}
	began := time.Now()
	text, _ := callText(cs, "print('again')")
	if !strings.Contains(text, "again") || !strings.Contains(text, "new sandbox") || !strings.Contains(text, "evicted (EvictionByEvictionAPI)") {
		t.Fatalf("the call after the pod was evicted (%v): %q", time.Since(began), text)
	}
	t.Logf("replaced in %v: %q", time.Since(began), text)
}

// TestKubePool: the bridge's warm pool keeps pods ready on the cluster as
// it keeps containers ready on Docker: with MCP_BRIDGE_POOL_SIZE=2, new
// sessions' first calls run in pods that were started before the
// sessions were opened (the pod's hostname is its name), and the pool
// fills again behind them, under runc and gVisor.
func TestKubePool(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, _ bool) {
		b := startHTTPBridge(t, e, httpOpts{env: append(env, "MCP_BRIDGE_POOL_SIZE=2")})
		ready := func() map[string]bool {
			t.Helper()
			deadline := time.Now().Add(90 * time.Second)
			for {
				running := map[string]bool{}
				for _, p := range b.containers(t) {
					if p.State == "running" {
						running[p.ID] = true
					}
				}
				if len(running) >= 2 || time.Now().After(deadline) {
					return running
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		for i := range 2 {
			pooled := ready()
			if len(pooled) < 2 {
				t.Fatalf("round %d: the pool holds %d running pods, want 2", i, len(pooled))
			}
			cs := b.session(t, nil)
			text, isErr := callText(cs, "import socket\nprint(socket.gethostname())")
			if isErr || !pooled[text] {
				t.Fatalf("round %d: the first call ran in %q (%v), not in a pod of the pool %v", i, text, isErr, pooled)
			}
			cs.Close()
		}
	})
}

// kubeNetnsDir is where the test cluster's containerd keeps its pods'
// network namespaces (scripts/provision-kubernetes:
// netns_mounts_under_state_dir).
const kubeNetnsDir = "/run/mcp-bridge-k8s/containerd/io.containerd.grpc.v1.cri/netns"

// TestKubePodsPrivate: on the cluster scripts/provision --kubernetes
// builds, a runc sandbox pod's only interface but lo is a macvlan in
// private mode (no other pod is reachable over it) on a lower device with
// no address, read from the node's network namespaces (no traffic is
// sent); a gVisor pod has lo alone (runsc's network is none).
func TestKubePodsPrivate(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, gvisor bool) {
		b := startHTTPBridge(t, e, httpOpts{env: env})
		cs := b.session(t, nil)
		want := "['eth0', 'lo']"
		if gvisor {
			want = "['lo']"
		}
		if text, isErr := callText(cs, "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))"); isErr || text != want {
			t.Fatalf("the pod's interfaces: %v %q, want %s", isErr, text, want)
		}
		namespaces, _ := filepath.Glob(kubeNetnsDir + "/cni-*")
		seen := 0
		for _, ns := range namespaces {
			out, err := exec.Command("nsenter", "--net="+ns, "ip", "-d", "-o", "link", "show", "eth0").CombinedOutput()
			if err != nil {
				continue // a namespace being torn down, or without eth0
			}
			seen++
			if link := string(out); !strings.Contains(link, "macvlan mode private") {
				t.Errorf("a pod's eth0 (%s) is not a private macvlan: %s", ns, link)
			}
		}
		if seen == 0 {
			t.Fatalf("no pod network namespace with an eth0 among %q", namespaces)
		}
		lower, err := exec.Command("ip", "-o", "addr", "show", "dev", "mcpk8s0").CombinedOutput()
		if err != nil || strings.TrimSpace(string(lower)) != "" {
			t.Fatalf("the pods' lower device has addresses on the node: %v %q", err, lower)
		}
		t.Logf("%d pod network namespaces, each eth0 a private macvlan", seen)
	})
}

// TestKubeImageNotOnNode: an image the node does not hold is reported at
// once, naming the image, instead of a hang.
func TestKubeImageNotOnNode(t *testing.T) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_IMAGE=localhost/no-such-image:1", "MCP_BRIDGE_POOL_SIZE=0"}})
	cs := b.session(t, nil)
	began := time.Now()
	text, isErr := callText(cs, "print(1)")
	if !isErr || !strings.Contains(text, "localhost/no-such-image:1") || time.Since(began) > 30*time.Second {
		t.Fatalf("an image not on the node (%v): %v %q", time.Since(began), isErr, text)
	}
}

// TestKubeHostile runs the hostile suite on pods, under runc and gVisor.
// A pod has no pids limit of its own: the kubelet's podPidsLimit (512
// here) bounds each pod, and under gVisor the runtime's RLIMIT_NPROC
// (TestKubeRlimits: EAGAIN after 114 forks, 499 under runc). The suite's
// fork bomb, of sleeping Python children, meets the memory limit first
// on both (OOM-killed, the session replaced), as under Docker with gVisor:
// its want is gVisor's on both. The cases the bridge decides ran on
// the other engines.
func TestKubeHostile(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, _ bool) {
		runHostile(t, engine.BackendKubernetes, true, false, env...)
	})
}

// kubeLimitsProbe prints the rlimits seen from inside a sandbox, and
// whether the variable that named them is still in the environment.
const kubeLimitsProbe = `import json, os, resource
print(json.dumps({"nofile": resource.getrlimit(resource.RLIMIT_NOFILE), "nproc": resource.getrlimit(resource.RLIMIT_NPROC),
    "env": "MCP_SANDBOX_RLIMITS" in os.environ}))`

// TestKubeRlimits: a pod has no rlimits of its own; the runtime lowers
// its own at start, before any code runs: RLIMIT_NOFILE to the sandbox's
// (1024) on both runtimes, RLIMIT_NPROC to MCP_BRIDGE_PIDS (128) under
// gVisor, whose Sentry counts the sandbox's own tasks: there a fork bomb
// meets EAGAIN, and the session keeps its state. Under runc the pod's
// pids cgroup (the kubelet's podPidsLimit) bounds it.
func TestKubeRlimits(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, _ testEngine, env []string, gvisor bool) {
		cs := connectBridge(t, engine.BackendKubernetes, env...)
		text, isErr := runPython(t, cs, map[string]any{"code": kubeLimitsProbe})
		var got struct {
			NoFile [2]int64 `json:"nofile"`
			NProc  [2]int64 `json:"nproc"`
			Env    bool     `json:"env"`
		}
		if err := json.Unmarshal([]byte(text), &got); isErr || err != nil {
			t.Fatalf("the probe: %q %v", text, err)
		}
		if got.NoFile != [2]int64{1024, 1024} || got.Env {
			t.Errorf("RLIMIT_NOFILE from inside: %+v", got)
		}
		if gvisor && got.NProc != [2]int64{128, 128} {
			t.Errorf("RLIMIT_NPROC from inside under gVisor: %+v, want 128", got.NProc)
		}
		t.Logf("from inside: nofile %v, nproc %v", got.NoFile, got.NProc)
		// Python children cost the memory limit before the task limit
		// (the hostile suite's fork bomb is OOM-killed on pods): these
		// exec a small program, so that the task limit is met first.
		runPython(t, cs, map[string]any{"code": "kept = 42"})
		text, _ = runPython(t, cs, map[string]any{"timeout": 60, "code": `import os
n = 0
try:
    while True:
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "120"])
        n += 1
except OSError as e:
    print("blocked errno", e.errno, "after", n)`})
		after, isErr := runPython(t, cs, map[string]any{"code": "print(globals().get('kept'))"})
		t.Logf("fork bomb: %q; next call %q", oneLineText(text), oneLineText(after))
		var n int
		if gvisor {
			if _, err := fmt.Sscanf(text, "blocked errno 11 after %d", &n); err != nil || n >= 128 || isErr || after != "42" {
				t.Errorf("a fork bomb under gVisor: %q, then %q (want EAGAIN within RLIMIT_NPROC, the state kept)", text, after)
			}
		} else if !strings.Contains(text, "blocked errno 11") && !strings.Contains(text, "OOM-killed") || isErr {
			t.Errorf("a fork bomb under runc: %q, then %q (want EAGAIN at the pod's pids limit, or the memory limit)", text, after)
		}
	})
}
