//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent-sandbox source of item 19 (BenchmarkKubePoolFirstCall): a
// bridge whose sessions are SandboxClaims of a hardened SandboxTemplate
// (the bridge's own pod spec, a deny-all network policy) whose
// SandboxWarmPool keeps 2 pods; the next session starts once the warm
// pool holds 2 running pods again. Without agent-sandbox's CRDs the
// source is left out and item 19 says so.
func init() {
	kubeExtraSources = append(kubeExtraSources, kubeClaimSource)
}

// kubeClaimSource returns the claim source of RuntimeClass class.
func kubeClaimSource(b *testing.B, class string) (kubeFirstSource, bool) {
	k := kubeAdmin{t: b, kubeconfig: filepath.Join(filepath.Dir(os.Getenv("KUBECONFIG")), "admin.kubeconfig")}
	if _, err := k.try("", "get", "crd", "sandboxclaims.extensions.agents.x-k8s.io"); err != nil {
		kubePoolSection().note("The agent-sandbox claim was not measured in this run: its CRDs are not installed " +
			"(`scripts/provision --kubernetes --agent-sandbox`).")
		return kubeFirstSource{}, false
	}
	name := "mcp-bench-claim-runc"
	if class != "" {
		name = "mcp-bench-claim-" + class
	}
	env := []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_K8S_RUNTIME_CLASS=" + class}
	kt := kubeClaimTemplate(b, kubeEngine(b), k, name, env)
	kt.warmPods(b, 2)
	return kubeFirstSource{
		label: "agent-sandbox claim",
		env:   []string{"MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_K8S_SANDBOX_TEMPLATE=" + name},
		ready: func(b *testing.B, _ *httpBridge) bool {
			out, err := k.try("", "-n", kt.ns, "get", "pods", "-l", "agents.x-k8s.io/pool="+kubeNameHash(kt.pool),
				"-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
			n := 0
			for _, line := range strings.Split(out, "\n") {
				if len(strings.Fields(line)) == 1 {
					n++
				}
			}
			return err == nil && n >= 2
		},
	}, true
}
