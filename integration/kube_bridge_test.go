//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The bridge deployed in the test cluster (deploy/kubernetes, and
// integration/testdata/kubernetes/bridge-statefulset.yaml in place of its
// Deployment: the cluster has no kube-proxy).
const (
	kubeBridgeNS    = "mcp-bridge"
	kubeBridgeImage = "localhost/mcp-bridge:latest"
	// kubeBridgePort is replica 0's loopback port; replica i listens on
	// kubeBridgePort+i (the StatefulSet's args).
	kubeBridgePort = 19470
	// kubeContainerdSock is the test cluster's containerd
	// (scripts/provision-kubernetes: CONTAINERD_SOCK).
	kubeContainerdSock = "/run/mcp-bridge-k8s/containerd/containerd.sock"
)

// kubeOwnerLabel is the label of a sandbox pod naming its owner's namespace.
var kubeOwnerLabel = engine.LabelPodNamespace + "=" + kubeBridgeNS

// A kubeAdmin runs kubectl as the cluster's administrator.
type kubeAdmin struct {
	t          testing.TB
	kubeconfig string
}

// run runs kubectl with args (stdin, when set, as its input) and returns
// its output, failing the test on an error.
func (k kubeAdmin) run(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.try(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs kubectl with args and returns its output and error.
func (k kubeAdmin) try(stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// portForward runs `kubectl port-forward` to pod's remote port on a free
// loopback port and returns the bridge's URL there and a function that
// ends it; it ends with the pod, or at the end of the test.
func (k kubeAdmin) portForward(pod string, remote int) (string, func()) {
	k.t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", k.kubeconfig, "-n", kubeBridgeNS, "port-forward",
		"pod/"+pod, "--address", "127.0.0.1", fmt.Sprintf(":%d", remote))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		k.t.Fatalf("kubectl port-forward: %v", err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	k.t.Cleanup(stop)
	local := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) ->`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case local <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case port := <-local:
		return "http://127.0.0.1:" + port + "/mcp", stop
	case <-time.After(30 * time.Second):
		k.t.Fatalf("kubectl port-forward to pod %s: no local port within 30 s", pod)
	}
	return "", stop
}

// kubeBridgeHealthy reports whether the bridge at url answers /healthz
// with "ok" within timeout.
func kubeBridgeHealthy(u, token string, timeout time.Duration) bool {
	health := strings.TrimSuffix(u, "/mcp") + "/healthz"
	c := &http.Client{Timeout: 3 * time.Second}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, health, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := c.Do(req)
		if err != nil {
			continue
		}
		var b [256]byte
		n, _ := res.Body.Read(b[:])
		res.Body.Close()
		if res.StatusCode == http.StatusOK && strings.Contains(string(b[:n]), `"status":"ok"`) {
			return true
		}
	}
	return false
}

// dial connects a 2026-07-28 client to replica i (pod) through a port
// forward, once the replica answers /healthz: a port forward whose first
// connection failed (the bridge not listening yet) may have ended, and is
// started again.
func (k kubeAdmin) dial(pod string, i int, token string) *mcp.ClientSession {
	k.t.Helper()
	for range 4 {
		u, stop := k.portForward(pod, kubeBridgePort+i)
		if kubeBridgeHealthy(u, token, 20*time.Second) {
			return (&httpBridge{url: u, token: token, base: &http.Transport{}}).dialStateless(k.t, u)
		}
		stop()
	}
	k.t.Fatalf("replica %s does not answer /healthz through kubectl port-forward", pod)
	return nil
}

// kubeAPIServerPort returns the port of the API server the kubeconfig
// names.
func kubeAPIServerPort(t testing.TB, k kubeAdmin) string {
	t.Helper()
	server := k.run("", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	u, err := url.Parse(server)
	if err != nil || u.Port() == "" || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		t.Fatalf("the API server %q is not on loopback with a port: %v", server, err)
	}
	return u.Port()
}

// p50 returns the median of d.
func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// warmCalls returns the median of n calls of print(1) in handle h's
// sandbox through cs.
func warmCalls(t testing.TB, cs *mcp.ClientSession, h string, n int) time.Duration {
	t.Helper()
	d := make([]time.Duration, 0, n)
	for range n {
		began := time.Now()
		if text, isErr, _ := runIn(t, cs, h, "print(1)", 30); isErr || text != "1" {
			t.Fatalf("a warm call: %v %q", isErr, text)
		}
		d = append(d, time.Since(began))
	}
	return p50(d)
}

// deployBridgeInCluster builds the bridge's image (scripts/bridge-image),
// loads it into the cluster's containerd and runs it as two replicas with
// the RBAC, Secret and owner of deploy/kubernetes (the StatefulSet of
// testdata in place of the Deployment), both Ready; everything is removed
// at the end of the test, failed or not. It returns the administrator's
// kubectl, the sandbox namespace and the clients' token.
func deployBridgeInCluster(t testing.TB) (k kubeAdmin, sandboxNS, token string) {
	t.Helper()
	if _, err := os.Stat(kubeContainerdSock); err != nil {
		t.Fatalf("the cluster's containerd socket: %v (scripts/provision --kubernetes)", err)
	}
	k = kubeAdmin{t: t, kubeconfig: filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "admin.kubeconfig")}
	sandboxNS = kubeNamespace()

	// The image, built and loaded as an operator would.
	dir := t.TempDir()
	tarball := filepath.Join(dir, "mcp-bridge.tar")
	began := time.Now()
	if out, err := exec.Command("bash", "../scripts/bridge-image", "--save", tarball).CombinedOutput(); err != nil {
		t.Fatalf("scripts/bridge-image: %v\n%s", err, out)
	}
	built := time.Since(began)
	began = time.Now()
	if out, err := exec.Command("ctr", "--address", kubeContainerdSock, "-n", "k8s.io", "images", "import", tarball).CombinedOutput(); err != nil {
		t.Fatalf("importing the image into the cluster's containerd: %v\n%s", err, out)
	}
	imported := time.Since(began)
	fi, _ := os.Stat(tarball)
	t.Logf("image: built in %v, imported (%d MiB) in %v", built.Round(time.Millisecond), fi.Size()>>20, imported.Round(time.Millisecond))

	// Leftovers of an earlier run, then everything removed at the end,
	// failed or not.
	kubeBridgeTeardown(t, k, sandboxNS)
	t.Cleanup(func() { kubeBridgeTeardown(t, k, sandboxNS) })
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := k.try("", "-n", kubeBridgeNS, "logs", "--prefix", "--tail=60", "-l", "app.kubernetes.io/name=mcp-bridge")
			t.Logf("the replicas' logs:\n%s", out)
		}
	})
	for i := range 2 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", kubeBridgePort+i))
		if err != nil {
			t.Fatalf("a replica's port is taken: %v", err)
		}
		ln.Close()
	}

	deploy := func(f string) string { return filepath.Join("..", "deploy", "kubernetes", f) }
	k.run("", "apply", "-f", deploy("00-namespaces.yaml"), "-f", deploy("10-rbac.yaml"), "-f", deploy("20-networkpolicy.yaml"))
	// The Deployment and Service as deployed, checked by the API server
	// (and Pod Security "restricted") without running: nothing would
	// route to them here.
	k.run("", "apply", "--dry-run=server", "-f", deploy("30-deployment.yaml"), "-f", deploy("40-service.yaml"))
	// Host networking, for the test's replicas only.
	k.run("", "label", "namespace", kubeBridgeNS, "--overwrite",
		"pod-security.kubernetes.io/enforce=privileged", "pod-security.kubernetes.io/warn=privileged")
	key := rand.Text() + rand.Text()
	token = rand.Text()
	k.run("", "-n", kubeBridgeNS, "create", "secret", "generic", "mcp-bridge",
		"--from-literal=handle-key="+key, "--from-literal=http-token="+token)
	manifest, err := os.ReadFile(filepath.Join("testdata", "kubernetes", "bridge-statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	image := os.Getenv("MCP_BRIDGE_IMAGE")
	if image == "" {
		t.Fatal("MCP_BRIDGE_IMAGE is not set: eval the exports of scripts/provision --kubernetes")
	}
	k.run(strings.NewReplacer("@APISERVER_PORT@", kubeAPIServerPort(t, k), "@SANDBOX_IMAGE@", image).Replace(string(manifest)),
		"apply", "-f", "-")
	waitFor(t, 60*time.Second, "the StatefulSet's pods made", func() bool {
		out, err := k.try("", "-n", kubeBridgeNS, "get", "pods", "-l", "app.kubernetes.io/name=mcp-bridge", "-o", "name")
		return err == nil && len(strings.Fields(out)) == 2
	})
	k.run("", "-n", kubeBridgeNS, "wait", "--for=condition=Ready", "--timeout=120s", "pod/mcp-bridge-0", "pod/mcp-bridge-1")

	return k, sandboxNS, token
}

// TestKubeBridgeInCluster: the bridge's image (scripts/bridge-image),
// loaded into the cluster's containerd, runs as two replicas in the
// cluster with the RBAC, Secret and owner of deploy/kubernetes; a
// 2026-07-28 client reaches each through `kubectl port-forward`. A
// handle minted on replica 0 is resumed on replica 1 after replica 0's
// pod is deleted (as a rolling update does), and on the replica that
// replaces it (whose orphan clean-up spares it); a handle minted on
// replica 1 survives its pod being killed (force-deleted). Sandbox pods
// are labelled with their owner pod; deleting everything leaves nothing.
func TestKubeBridgeInCluster(t *testing.T) {
	kubeRequired(t)
	k, sandboxNS, token := deployBridgeInCluster(t)
	uid := func(pod string) string {
		return k.run("", "-n", kubeBridgeNS, "get", "pod", pod, "-o", "jsonpath={.metadata.uid}")
	}
	c0, c1 := k.dial("mcp-bridge-0", 0, token), k.dial("mcp-bridge-1", 1, token)
	uid0, uid1 := uid("mcp-bridge-0"), uid("mcp-bridge-1")

	// Replica 0 mints a handle; its sandbox pod names replica 0 as owner.
	text, isErr, h := runIn(t, c0, "", "import socket\nx = 41\nprint(socket.gethostname())", 60)
	if isErr || h == "" {
		t.Fatalf("the first call on replica 0: %v %q (handle %q)", isErr, text, h)
	}
	sandbox := text[strings.LastIndexByte(text, '\n')+1:]
	kubeCheckOwner(t, k, sandboxNS, sandbox, "mcp-bridge-0", uid0)
	t.Logf("warm call in the cluster through port-forward, on the replica that started the sandbox: p50 %v (50 calls)",
		warmCalls(t, c0, h, 50).Round(10*time.Microsecond))

	// Replica 0 deleted as a rolling update deletes it (SIGTERM, drain):
	// replica 1 resumes the handle, with its state.
	k.run("", "-n", kubeBridgeNS, "delete", "pod", "mcp-bridge-0", "--wait=true", "--timeout=90s")
	began := time.Now()
	if text, isErr, _ := runIn(t, c1, h, "x += 1\nprint(x)", 60); isErr || text != "42" {
		t.Fatalf("the handle on replica 1 after replica 0 was deleted: %v %q", isErr, text)
	}
	t.Logf("replica 1 resumed the handle of deleted replica 0 in %v (its first call on it)", time.Since(began).Round(time.Millisecond))
	// Its graceful stop removed its pool's sandbox and left the handle's.
	if left := kubeOwnedBy(t, k, sandboxNS, uid0); !slices.Equal(left, []string{"pod/" + sandbox}) {
		t.Errorf("the sandbox pods deleted replica 0 left: %q, want only the handle's, %s", left, sandbox)
	}
	t.Logf("warm call in the cluster through port-forward, on the replica that resumed the sandbox: p50 %v (50 calls)",
		warmCalls(t, c1, h, 50).Round(10*time.Microsecond))

	// Its replacement (same name, another UID) cleans up orphans at start:
	// the handle's pod, whose owner is gone, lives on behind its handle.
	waitFor(t, 60*time.Second, "replica 0's pod made again", func() bool {
		out, err := k.try("", "-n", kubeBridgeNS, "get", "pod", "mcp-bridge-0", "-o", "jsonpath={.metadata.uid}")
		return err == nil && out != "" && out != uid0
	})
	k.run("", "-n", kubeBridgeNS, "wait", "--for=condition=Ready", "--timeout=120s", "pod/mcp-bridge-0")
	c0 = k.dial("mcp-bridge-0", 0, token)
	if text, isErr, _ := runIn(t, c0, h, "x += 1\nprint(x)", 60); isErr || text != "43" {
		t.Fatalf("the handle on the new replica 0: %v %q", isErr, text)
	}

	// Replica 1 mints a handle, then is killed (no grace): the new
	// replica 0 resumes it.
	text, isErr, h1 := runIn(t, c1, "", "import socket\ny = 7\nprint(socket.gethostname())", 60)
	if isErr || h1 == "" {
		t.Fatalf("the first call on replica 1: %v %q", isErr, text)
	}
	kubeCheckOwner(t, k, sandboxNS, text[strings.LastIndexByte(text, '\n')+1:], "mcp-bridge-1", uid1)
	k.run("", "-n", kubeBridgeNS, "delete", "pod", "mcp-bridge-1", "--grace-period=0", "--force")
	began = time.Now()
	if text, isErr, _ := runIn(t, c0, h1, "y += 1\nprint(y, x if 'x' in globals() else None)", 60); isErr || text != "8 None" {
		t.Fatalf("the handle of killed replica 1 on replica 0: %v %q", isErr, text)
	}
	t.Logf("replica 0 resumed the handle of killed replica 1 in %v (its first call on it)", time.Since(began).Round(time.Millisecond))
	t.Logf("the sandbox pods killed replica 1 left: %q", kubeOwnedBy(t, k, sandboxNS, uid1))
	if text, isErr, _ := runIn(t, c0, h, "print(x)", 60); isErr || text != "43" {
		t.Fatalf("the first handle after replica 1 was killed: %v %q", isErr, text)
	}

	// The Roles granted all the replicas asked for.
	for _, pod := range []string{"mcp-bridge-0", "mcp-bridge-1"} {
		if out, err := k.try("", "-n", kubeBridgeNS, "logs", pod); err == nil && strings.Contains(strings.ToLower(out), "forbidden") {
			t.Errorf("replica %s was refused something (RBAC):\n%s", pod, out)
		}
	}

	// The same warm call from a bridge on the host, for comparison.
	host := startHTTPBridge(t, connect(t, engine.BackendKubernetes), replicaEnv(rand.Text()+rand.Text(), rand.Text(), "host"))
	removeResumable(t, connect(t, engine.BackendKubernetes), host)
	hc := host.dialStateless(t, host.url)
	_, isErr, hh := runIn(t, hc, "", "print(1)", 60)
	if isErr || hh == "" {
		t.Fatal("the host bridge's first call failed")
	}
	t.Logf("warm call on a host bridge (no port-forward): p50 %v (50 calls)", warmCalls(t, hc, hh, 50).Round(10*time.Microsecond))

	// With agent-sandbox, the replicas' sessions are SandboxClaims, made
	// and read under the ServiceAccount's Role.
	t.Run("agent-sandbox", func(t *testing.T) {
		kubeClaimAdmin(t)
		k := kubeAdmin{t: t, kubeconfig: k.kubeconfig}
		name := "mcp-test-claim-bridge"
		kubeClaimTemplate(t, connect(t, engine.BackendKubernetes), k, name, []string{"MCP_BRIDGE_POOL_SIZE=0"})
		k.run("", "-n", kubeBridgeNS, "set", "env", "statefulset/mcp-bridge", "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE="+name)
		k.run("", "-n", kubeBridgeNS, "rollout", "status", "statefulset/mcp-bridge", "--timeout=180s")
		cs := k.dial("mcp-bridge-0", 0, token)
		text, isErr, h := runIn(t, cs, "", "import socket\nz = 5\nprint(socket.gethostname())", 90)
		if isErr || h == "" {
			t.Fatalf("a claimed sandbox's first call on replica 0: %v %q", isErr, text)
		}
		pod := text[strings.LastIndexByte(text, '\n')+1:]
		claims := strings.Fields(k.run("", "-n", sandboxNS, "get", "sandboxclaims", "-l", engine.LabelPodUID+"="+k.run("", "-n", kubeBridgeNS, "get", "pod", "mcp-bridge-0", "-o", "jsonpath={.metadata.uid}"),
			"-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`))
		// The session's claim, and the pool's.
		if !slices.ContainsFunc(claims, func(c string) bool { return claimedPod(t, k, c) == pod }) {
			t.Fatalf("replica 0's claims %q: none of pod %s", claims, pod)
		}
		if text, isErr, _ := runIn(t, cs, h, "print(z + 1)", 60); isErr || text != "6" {
			t.Fatalf("the claimed sandbox's state: %v %q", isErr, text)
		}
		for _, pod := range []string{"mcp-bridge-0", "mcp-bridge-1"} {
			if out, err := k.try("", "-n", kubeBridgeNS, "logs", pod); err == nil && strings.Contains(strings.ToLower(out), "forbidden") {
				t.Errorf("replica %s was refused something (RBAC):\n%s", pod, out)
			}
		}
	})
}

// kubeCheckOwner checks that sandbox pod's labels name the bridge pod
// owner (its namespace, name and UID).
func kubeCheckOwner(t testing.TB, k kubeAdmin, ns, pod, owner, uid string) {
	t.Helper()
	got := k.run("", "-n", ns, "get", "pod", pod, "-o", fmt.Sprintf(`jsonpath={.metadata.labels['%s']}/{.metadata.labels['%s']}/{.metadata.labels['%s']}`,
		strings.ReplaceAll(engine.LabelPodNamespace, ".", `\.`), strings.ReplaceAll(engine.LabelPodName, ".", `\.`), strings.ReplaceAll(engine.LabelPodUID, ".", `\.`)))
	if want := kubeBridgeNS + "/" + owner + "/" + uid; got != want {
		t.Fatalf("sandbox pod %s's owner labels: %q, want %q", pod, got, want)
	}
}

// kubeOwnedBy returns the sandbox pods ("pod/NAME") whose owner is the
// bridge pod of UID uid, but those being deleted.
func kubeOwnedBy(t testing.TB, k kubeAdmin, ns, uid string) []string {
	t.Helper()
	out := k.run("", "-n", ns, "get", "pods", "-l", engine.LabelPodUID+"="+uid,
		"-o", `jsonpath={range .items[*]}pod/{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var pods []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 1 {
			pods = append(pods, f[0])
		}
	}
	return pods
}

// kubeBridgeTeardown deletes what TestKubeBridgeInCluster made, as an
// operator removing the bridge would: its namespace (replicas, Secret,
// ServiceAccount, owner Role), its Role in the sandbox namespace, and
// the sandbox pods its replicas left behind handles (a graceful stop
// with a shared key leaves them to the other replicas); then checks that
// none of it is left. The sandbox namespace and its NetworkPolicy stay:
// the other tests use them.
func kubeBridgeTeardown(t testing.TB, k kubeAdmin, sandboxNS string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", k.kubeconfig}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	steps := [][]string{
		{"delete", "namespace", kubeBridgeNS, "--ignore-not-found", "--wait=true", "--timeout=120s"},
		{"-n", sandboxNS, "delete", "role,rolebinding", "mcp-bridge-sandboxes", "--ignore-not-found"},
	}
	if _, err := kc("get", "crd", "sandboxclaims.extensions.agents.x-k8s.io"); err == nil {
		steps = append(steps, []string{"-n", sandboxNS, "delete", "sandboxclaims.extensions.agents.x-k8s.io", "-l", kubeOwnerLabel,
			"--ignore-not-found", "--wait=true", "--timeout=60s"})
	}
	steps = append(steps, []string{"-n", sandboxNS, "delete", "pods", "-l", kubeOwnerLabel, "--ignore-not-found", "--wait=true", "--timeout=60s"})
	for _, s := range steps {
		if out, err := kc(s...); err != nil {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
	left := []string{}
	if out, err := kc("get", "namespace", kubeBridgeNS, "--ignore-not-found", "-o", "name"); err != nil || out != "" {
		left = append(left, "namespace: "+out)
	}
	if out, err := kc("-n", sandboxNS, "get", "pods", "-l", kubeOwnerLabel, "-o", "name"); err != nil || out != "" {
		left = append(left, "pods: "+out)
	}
	if out, err := kc("-n", sandboxNS, "get", "role,rolebinding", "-o", "name"); err == nil && strings.Contains(out, "mcp-bridge-sandboxes") {
		left = append(left, "RBAC: "+out)
	}
	// agent-sandbox's claims, where its CRDs are installed.
	if out, err := kc("-n", sandboxNS, "get", "sandboxclaims.extensions.agents.x-k8s.io", "-l", kubeOwnerLabel, "-o", "name"); err == nil && out != "" {
		left = append(left, "claims: "+out)
	}
	if len(left) > 0 {
		t.Errorf("left behind by the bridge in the cluster: %s", strings.Join(left, "; "))
	}
}
