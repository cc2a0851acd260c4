//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The agent-sandbox tests (MCP_BRIDGE_K8S_SANDBOX_TEMPLATE): the operator's
// SandboxTemplate and SandboxWarmPool, made here as the cluster's admin,
// keep pods ready; each session of the bridge is a SandboxClaim of one.
// They need agent-sandbox's CRDs and controller (scripts/provision
// --kubernetes --agent-sandbox) and are skipped, saying so, without them.

// kubeClaimAdmin returns kubectl as the cluster's admin, skipping the test
// when agent-sandbox's CRDs are not installed.
func kubeClaimAdmin(t testing.TB) kubeAdmin {
	t.Helper()
	k := kubeAdmin{t: t, kubeconfig: filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "admin.kubeconfig")}
	if _, err := k.try("", "get", "crd", "sandboxclaims.extensions.agents.x-k8s.io", "sandboxwarmpools.extensions.agents.x-k8s.io"); err != nil {
		t.Skip("agent-sandbox's CRDs are not installed (scripts/provision --kubernetes --agent-sandbox installs them)")
	}
	return k
}

// kubeNameHash is agent-sandbox's NameHash: the label value naming a
// warm pool on its pods.
func kubeNameHash(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// kubeBridgePodSpec returns the spec of a pod the bridge makes under
// env, as JSON: what a template that copies the bridge's hardening holds.
// The fields the API server or the scheduler filled in are left out.
func kubeBridgePodSpec(t testing.TB, e testEngine, env []string) map[string]any {
	t.Helper()
	b := startHTTPBridge(t, e, httpOpts{env: env})
	cs := b.session(t, nil)
	callText(cs, "x = 1")
	pods := b.containers(t)
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	k := kubeAdmin{t: t, kubeconfig: filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "admin.kubeconfig")}
	var pod struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.Unmarshal([]byte(k.run("", "-n", os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"), "get", "pod", pods[0].ID, "-o", "json")), &pod); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	b.cleanup()
	for _, f := range []string{"nodeName", "priority", "preemptionPolicy", "tolerations", "serviceAccount", "serviceAccountName", "schedulerName"} {
		delete(pod.Spec, f)
	}
	return pod.Spec
}

// A kubeTemplate is a SandboxTemplate (and its warm pool, when it has
// one) made for a test, deleted at its end.
type kubeTemplate struct {
	name string
	pool string // the SandboxWarmPool's name; "" for none
	k    kubeAdmin
	ns   string
}

// makeKubeTemplate creates the SandboxTemplate name with podSpec and the
// rest of its spec (networkPolicy…), and a SandboxWarmPool of replicas
// pods when replicas > 0.
func makeKubeTemplate(t testing.TB, k kubeAdmin, name string, podSpec map[string]any, rest map[string]any, replicas int) *kubeTemplate {
	t.Helper()
	ns := os.Getenv("MCP_BRIDGE_K8S_NAMESPACE")
	spec := map[string]any{"podTemplate": map[string]any{"metadata": map[string]any{}, "spec": podSpec}}
	for k, v := range rest {
		spec[k] = v
	}
	tpl := map[string]any{"apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxTemplate",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
	js, _ := json.Marshal(tpl)
	k.run(string(js), "apply", "-f", "-")
	kt := &kubeTemplate{name: name, k: k, ns: ns}
	t.Cleanup(kt.delete)
	if replicas > 0 {
		kt.pool = name + "-pool"
		pool := fmt.Sprintf(`{"apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxWarmPool",
			"metadata": {"name": %q, "namespace": %q}, "spec": {"replicas": %d, "sandboxTemplateRef": {"name": %q}}}`, kt.pool, ns, replicas, name)
		k.run(pool, "apply", "-f", "-")
	}
	return kt
}

// delete deletes the warm pool (and so its pods), the template and the
// claims of it that are left.
func (kt *kubeTemplate) delete() {
	if kt.pool != "" {
		kt.k.try("", "-n", kt.ns, "delete", "sandboxwarmpool", kt.pool, "--ignore-not-found", "--wait=true", "--timeout=60s")
		kt.k.try("", "-n", kt.ns, "delete", "pods", "-l", "agents.x-k8s.io/pool="+kubeNameHash(kt.pool), "--grace-period=0", "--ignore-not-found")
	}
	kt.k.try("", "-n", kt.ns, "delete", "sandboxtemplate", kt.name, "--ignore-not-found")
}

// warmPods waits until the warm pool has n running pods and returns their
// names with their creation times.
func (kt *kubeTemplate) warmPods(t testing.TB, n int) map[string]time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := kt.k.try("", "-n", kt.ns, "get", "pods", "-l", "agents.x-k8s.io/pool="+kubeNameHash(kt.pool),
			"-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {.metadata.creationTimestamp} {.metadata.deletionTimestamp}{"\n"}{end}`)
		pods := map[string]time.Time{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if err != nil || len(f) != 2 {
				continue // empty, or being deleted
			}
			created, _ := time.Parse(time.RFC3339, f[1])
			pods[f[0]] = created
		}
		if len(pods) >= n {
			return pods
		}
		if time.Now().After(deadline) {
			t.Fatalf("the warm pool %s has %d running pods after 3 min, want %d: %v %s", kt.pool, len(pods), n, err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// claimsOf returns the names of the SandboxClaims the bridge process pid
// owns.
func claimsOf(t testing.TB, k kubeAdmin, pid int) []string {
	t.Helper()
	out := k.run("", "-n", os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"), "get", "sandboxclaims", "-l", engine.LabelPID+"="+strconv.Itoa(pid),
		"-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`)
	return strings.Fields(out)
}

// claimedPod returns the pod of SandboxClaim claim.
func claimedPod(t testing.TB, k kubeAdmin, claim string) string {
	t.Helper()
	ns := os.Getenv("MCP_BRIDGE_K8S_NAMESPACE")
	uid := k.run("", "-n", ns, "get", "sandboxclaim", claim, "-o", "jsonpath={.metadata.uid}")
	return k.run("", "-n", ns, "get", "pods", "-l", "agents.x-k8s.io/claim-uid="+uid, "-o", "jsonpath={.items[0].metadata.name}")
}

// kubeClaimTemplate makes a hardened template (the bridge's own pod spec
// under env, with a deny-all network policy) and its warm pool of 2.
func kubeClaimTemplate(t testing.TB, e testEngine, k kubeAdmin, name string, env []string) *kubeTemplate {
	t.Helper()
	return makeKubeTemplate(t, k, name, kubeBridgePodSpec(t, e, env), map[string]any{"networkPolicy": map[string]any{}}, 2)
}

// TestKubeClaim: with MCP_BRIDGE_K8S_SANDBOX_TEMPLATE naming a hardened
// template whose warm pool holds 2 pods, a new session's first call runs
// in a pod that existed before the session (its hostname), the session
// keeps its state across calls, and its claim is deleted at its end;
// under runc and gVisor.
func TestKubeClaim(t *testing.T) {
	forEachKubeClass(t, func(t *testing.T, e testEngine, env []string, gvisor bool) {
		k := kubeClaimAdmin(t)
		name := "mcp-test-claim-runc"
		if gvisor {
			name = "mcp-test-claim-gvisor"
		}
		kt := kubeClaimTemplate(t, e, k, name, env)
		warm := kt.warmPods(t, 2)
		b := startHTTPBridge(t, e, httpOpts{env: append(env, "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE="+name)})
		opened := time.Now()
		cs := b.session(t, nil)
		began := time.Now()
		host, isErr := callText(cs, "import socket\nprint(socket.gethostname())")
		first := time.Since(began)
		created, ok := warm[host]
		if isErr || !ok || !created.Before(opened) {
			t.Fatalf("the first call ran in %q (%v), not in a warm pod made before the session %v", host, isErr, warm)
		}
		t.Logf("first call in warm pod %s (made %v before the session) in %v", host, opened.Sub(created).Round(time.Second), first)
		if text, isErr := callText(cs, "x = 41"); isErr {
			t.Fatalf("x = 41: %q", text)
		}
		if text, isErr := callText(cs, "print(x + 1)"); isErr || text != "42" {
			t.Fatalf("the session's state across calls: %q %v", text, isErr)
		}
		claims := claimsOf(t, k, b.pid)
		if len(claims) != 1 || claimedPod(t, k, claims[0]) != host {
			t.Fatalf("the bridge's claims: %v", claims)
		}
		cs.Close()
		waitFor(t, time.Minute, "the claim deleted at the session's end", func() bool { return len(claimsOf(t, k, b.pid)) == 0 })
	})
}

// TestKubeClaimRefused: a template that weakens the bridge's pod, or
// whose network policy the controller would make to allow egress, is
// refused at the first call with an error naming it and the field; no
// claim is made.
func TestKubeClaimRefused(t *testing.T) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	k := kubeClaimAdmin(t)
	env := []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_K8S_RUNTIME_CLASS="}
	spec := kubeBridgePodSpec(t, e, env)
	deny := map[string]any{"networkPolicy": map[string]any{}}
	rootish := func() map[string]any {
		js, _ := json.Marshal(spec)
		var s map[string]any
		json.Unmarshal(js, &s)
		c := s["containers"].([]any)[0].(map[string]any)
		delete(c["securityContext"].(map[string]any), "runAsNonRoot")
		delete(s["securityContext"].(map[string]any), "runAsNonRoot")
		return s
	}
	for _, tc := range []struct {
		name, want string
		pod        map[string]any
		rest       map[string]any
	}{
		{"mcp-test-claim-root", "does not run as the sandbox user", rootish(), deny},
		{"mcp-test-claim-egress", "egress to the Internet", spec, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			makeKubeTemplate(t, k, tc.name, tc.pod, tc.rest, 0)
			b := startHTTPBridge(t, e, httpOpts{env: append(env, "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE="+tc.name)})
			cs := b.session(t, nil)
			text, isErr := callText(cs, "print(1)")
			if !isErr || !strings.Contains(text, `SandboxTemplate "`+tc.name+`"`) || !strings.Contains(text, tc.want) {
				t.Fatalf("want the template refused, naming %q: %v %q", tc.want, isErr, text)
			}
			if c := claimsOf(t, k, b.pid); len(c) != 0 {
				t.Fatalf("a refused template was claimed from: %v", c)
			}
			t.Logf("refused: %s", text)
		})
	}
}

// TestKubeClaimPodDeleted: the claimed pod deleted under a session is a
// lost sandbox: the next call runs in a new one, and its notice says the
// state is gone.
func TestKubeClaimPodDeleted(t *testing.T) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	k := kubeClaimAdmin(t)
	env := []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_K8S_RUNTIME_CLASS="}
	kt := kubeClaimTemplate(t, e, k, "mcp-test-claim-lost", env)
	kt.warmPods(t, 1)
	b := startHTTPBridge(t, e, httpOpts{env: append(env, "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE="+kt.name)})
	cs := b.session(t, nil)
	callText(cs, "x = 1")
	claims := claimsOf(t, k, b.pid)
	if len(claims) != 1 {
		t.Fatalf("the bridge's claims: %v", claims)
	}
	pod := claimedPod(t, k, claims[0])
	k.run("", "-n", kt.ns, "delete", "pod", pod, "--wait=true", "--timeout=60s")
	time.Sleep(3 * time.Second)
	text, _ := callText(cs, "print('again')")
	if !strings.Contains(text, "again") || !strings.Contains(text, "new sandbox") || !strings.Contains(text, "deleted") {
		t.Fatalf("the call after the claimed pod was deleted: %q", text)
	}
	t.Logf("after the claimed pod was deleted: %q", text)
	if text, _ := callText(cs, "print(x)"); !strings.Contains(text, "NameError") {
		t.Fatalf("the state of the lost sandbox: %q", text)
	}
	waitFor(t, time.Minute, "the lost sandbox's claim deleted", func() bool { return !slices.Contains(claimsOf(t, k, b.pid), claims[0]) })
}

// TestKubeClaimBridgePool: the bridge's own pool (MCP_BRIDGE_POOL_SIZE)
// with a template claims ahead and starts its runtime in the claimed pods:
// a new session's first call runs in a pod of the template's warm pool,
// and the bridge's claims are deleted when it stops.
func TestKubeClaimBridgePool(t *testing.T) {
	kubeRequired(t)
	e := connect(t, engine.BackendKubernetes)
	k := kubeClaimAdmin(t)
	env := []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_K8S_RUNTIME_CLASS="}
	kt := kubeClaimTemplate(t, e, k, "mcp-test-claim-bridge-pool", env)
	kt.warmPods(t, 2)
	b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=2", "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE=" + kt.name}})
	for i := range 2 {
		waitFor(t, 2*time.Minute, "the bridge's pool claimed", func() bool { return poolReadyOf(t, b) == 2 })
		cs := b.session(t, nil)
		began := time.Now()
		host, isErr := callText(cs, "import socket\nprint(socket.gethostname())")
		if isErr || !strings.HasPrefix(host, kt.pool+"-") {
			t.Fatalf("round %d: the first call ran in %q (%v), not in a pod of the warm pool %s", i, host, isErr, kt.pool)
		}
		t.Logf("round %d: first call in %s in %v", i, host, time.Since(began))
		cs.Close()
	}
	pid := b.pid
	b.cleanup()
	if c := claimsOf(t, k, pid); len(c) != 0 {
		t.Fatalf("claims left by the stopped bridge: %v", c)
	}
}
