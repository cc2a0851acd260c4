//go:build integration

package integration

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Item 19 measures where a new session's first call on the cluster comes
// from: an unpooled pod (created, scheduled, started and attached for the
// call), a pod of the bridge's own warm pool, or a pod an agent-sandbox
// SandboxClaim took from the operator's SandboxWarmPool. Each source is a
// `serve -http` process of its own on the same cluster, sessions
// alternating between them so that the ratios compare like with like.

const kubePoolTitle = "Kubernetes warm pools: a new session's first call from the bridge's pod pool and from an agent-sandbox claim, against an unpooled pod"

// A kubeFirstSource is one way a session gets its pod: its label, the
// bridge's environment beside the RuntimeClass, and how to tell that the
// next session will find its pod ready (nil: nothing to wait for).
type kubeFirstSource struct {
	label string
	env   []string
	ready func(b *testing.B, br *httpBridge) bool
}

var (
	kubePoolMu   sync.Mutex
	kubePoolRows = map[string]stats{} // "class/source" → first calls
)

// kubePoolSection is item 19's section.
func kubePoolSection() *reportSection {
	sec := report.section("19", kubePoolTitle,
		"RuntimeClass", "source", "sessions", "first call p50", "p95", "÷ unpooled pod (p50)")
	sec.note("One `serve -http` process per source and RuntimeClass on the provisioned single-node cluster; each op is one " +
		"new HTTP session on every source in turn (go-sdk client, `print(1)`), connecting untimed, the first call timed. " +
		"Pool: `MCP_BRIDGE_POOL_SIZE=2`, the next session starting once /healthz reports both spares ready again. " +
		"Claim: `MCP_BRIDGE_K8S_SANDBOX_TEMPLATE` naming a hardened SandboxTemplate whose SandboxWarmPool keeps 2 pods; " +
		"the next session starts once the warm pool is full again. Unpooled: `MCP_BRIDGE_POOL_SIZE=0`, the pod made for the call.")
	return sec
}

// kubePoolRecord records a source's first calls and rewrites its row.
func kubePoolRecord(class, source string, s stats) {
	kubePoolMu.Lock()
	defer kubePoolMu.Unlock()
	kubePoolRows[class+"/"+source] = s
	ratio := "—"
	if base, ok := kubePoolRows[class+"/unpooled pod"]; ok && source != "unpooled pod" && s.p50 > 0 {
		ratio = fmt.Sprintf("%.2f×", float64(s.p50)/float64(base.p50))
	}
	kubePoolSection().row(class+"/"+source, class, source, strconv.Itoa(s.n), ms(s.p50), ms(s.p95), ratio)
}

// poolReadyOf reads pool_ready from the bridge's /healthz.
func poolReadyOf(b testing.TB, br *httpBridge) int {
	b.Helper()
	resp, err := br.httpClient(br.token).Get(strings.TrimSuffix(br.url, "/mcp") + "/healthz")
	if err != nil {
		b.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var h struct {
		PoolReady int `json:"pool_ready"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil {
		b.Fatalf("GET /healthz: %d %s", resp.StatusCode, body)
	}
	return h.PoolReady
}

// kubeExtraSources are the sources other files add (an agent-sandbox
// claim, when its CRDs are installed), per RuntimeClass.
var kubeExtraSources []func(b *testing.B, class string) (kubeFirstSource, bool)

// BenchmarkKubePoolFirstCall is item 19.
func BenchmarkKubePoolFirstCall(b *testing.B) {
	if os.Getenv("MCP_TEST_KUBERNETES") != "1" {
		kubePoolSection().note("Not measured in this run: MCP_TEST_KUBERNETES is not 1 " +
			"(`scripts/bench --kubernetes` sets it after `scripts/provision --kubernetes`).")
		b.Skip("MCP_TEST_KUBERNETES is not 1 (scripts/bench --kubernetes sets it after scripts/provision --kubernetes)")
	}
	e := kubeEngine(b)
	for _, kv := range kubeVariants() {
		class := kv.class
		b.Run(kv.label, func(b *testing.B) {
			sources := []kubeFirstSource{
				{label: "unpooled pod", env: []string{"MCP_BRIDGE_POOL_SIZE=0"},
					ready: func(b *testing.B, br *httpBridge) bool { return len(br.containers(b)) == 0 }},
				{label: "pod pool", env: []string{"MCP_BRIDGE_POOL_SIZE=2"},
					ready: func(b *testing.B, br *httpBridge) bool { return poolReadyOf(b, br) == 2 }},
			}
			for _, extra := range kubeExtraSources {
				if s, ok := extra(b, class); ok {
					sources = append(sources, s)
				}
			}
			bridges := make([]*httpBridge, len(sources))
			samples := make([][]time.Duration, len(sources))
			for i, s := range sources {
				env := append([]string{"MCP_BRIDGE_HTTP_TOKEN=bench-kube-pool-token-0123456789",
					"MCP_BRIDGE_K8S_RUNTIME_CLASS=" + class}, s.env...)
				bridges[i] = startHTTPBridge(b, e, httpOpts{env: env})
			}
			for b.Loop() {
				for i, s := range sources {
					b.StopTimer()
					waitFor(b, 3*time.Minute, s.label+" ready", func() bool { return s.ready(b, bridges[i]) })
					cs := bridges[i].session(b, nil)
					b.StartTimer()
					samples[i] = append(samples[i], timedCall(b, cs, map[string]any{"code": "print(1)"}, "1"))
					b.StopTimer()
					cs.Close()
					b.StartTimer()
				}
			}
			for i, s := range sources {
				st := summarize(samples[i])
				kubePoolRecord(kv.label, s.label, st)
				b.ReportMetric(float64(st.p50.Microseconds())/1000, strings.ReplaceAll(s.label, " ", "-")+"-p50-ms")
			}
		})
	}
}

// BenchmarkKubeBridgeWarmCall is item 20: a warm call (`print(1)` on a
// handle, over HTTP on protocol 2026-07-28) to the bridge deployed in the
// cluster from its image (deployBridgeInCluster), reached through
// `kubectl port-forward` as the test cluster allows (no kube-proxy),
// against the same call to a bridge process on the host, both on pods
// under the node's default runtime; the two take turns call by call.
func BenchmarkKubeBridgeWarmCall(b *testing.B) {
	sec := report.section("20", "The bridge in the cluster: a warm call through `kubectl port-forward`, against a bridge on the host",
		"bridge", "calls", "p50", "p95", "÷ host bridge (p50)")
	if os.Getenv("MCP_TEST_KUBERNETES") != "1" {
		sec.note("Not measured in this run: MCP_TEST_KUBERNETES is not 1 " +
			"(`scripts/bench --kubernetes` sets it after `scripts/provision --kubernetes`).")
		b.Skip("MCP_TEST_KUBERNETES is not 1 (scripts/bench --kubernetes sets it after scripts/provision --kubernetes)")
	}
	sec.note("Two replicas of the image of `scripts/bridge-image` in the cluster (the StatefulSet of " +
		"`integration/testdata/kubernetes`, host networking on loopback ports, the RBAC and Secret of " +
		"`deploy/kubernetes`), reached through `kubectl port-forward` (client → kubectl → API server → kubelet → " +
		"the replica's port); the host bridge is a `serve -http` process on the host reached on loopback. Each " +
		"has a handle's sandbox pod (runc) and 20 warm-up calls; then the two take turns call by call.")
	k, _, token := deployBridgeInCluster(b)
	inCluster := k.dial("mcp-bridge-0", 0, token)
	_, isErr, h := runIn(b, inCluster, "", "print(1)", 60)
	if isErr || h == "" {
		b.Fatal("the in-cluster bridge's first call failed")
	}
	e := kubeEngine(b)
	host := startHTTPBridge(b, e, replicaEnv(rand.Text()+rand.Text(), rand.Text(), "host", "MCP_BRIDGE_POOL_SIZE=0"))
	removeResumable(b, e, host)
	hostCS := host.dialStateless(b, host.url)
	_, isErr, hh := runIn(b, hostCS, "", "print(1)", 60)
	if isErr || hh == "" {
		b.Fatal("the host bridge's first call failed")
	}
	call := func(cs *mcp.ClientSession, h string) time.Duration {
		began := time.Now()
		if text, isErr, _ := runIn(b, cs, h, "print(1)", 30); isErr || text != "1" {
			b.Fatalf("a warm call: %v %q", isErr, text)
		}
		return time.Since(began)
	}
	for range 20 {
		call(inCluster, h)
		call(hostCS, hh)
	}
	var in, on []time.Duration
	for b.Loop() {
		in = append(in, call(inCluster, h))
		on = append(on, call(hostCS, hh))
	}
	si, sh := summarize(in), summarize(on)
	sec.row("in-cluster", "in the cluster, through port-forward", strconv.Itoa(si.n), ms(si.p50), ms(si.p95),
		fmt.Sprintf("%.2f×", float64(si.p50)/float64(sh.p50)))
	sec.row("host", "on the host", strconv.Itoa(sh.n), ms(sh.p50), ms(sh.p95), "")
	b.ReportMetric(float64(si.p50.Microseconds())/1000, "in-cluster-p50-ms")
	b.ReportMetric(float64(sh.p50.Microseconds())/1000, "host-p50-ms")
}
