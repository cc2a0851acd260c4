package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// kubeRoutesProgram prints the route tables of the pod's network
// namespace as one JSON object ("" for a table that is missing).
const kubeRoutesProgram = `import json
def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ""
print(json.dumps({"route": read("/proc/net/route"), "ipv6_route": read("/proc/net/ipv6_route")}))
`

// CheckEgress implements EgressChecker. The pod's Cmd must keep it
// running until it is closed, as the runtime and `python3 -u -` do
// (they wait on their standard input): its routes are read by a process
// run in it with pods/exec. The namespace's NetworkPolicies are listed
// only when the pod has a route out.
func (k *Kubernetes) CheckEgress(ctx context.Context, spec engine.Spec) (engine.KubeEgress, error) {
	sb, err := k.Start(ctx, spec)
	if err != nil {
		return engine.KubeEgress{}, fmt.Errorf("starting a sandbox pod: %w", err)
	}
	defer sb.Close()
	a, pod := k.api, sb.ID()
	var out bytes.Buffer
	if err := a.execIn(ctx, pod, []string{"python3", "-c", kubeRoutesProgram}, nil, &lifecycle.LimitedWriter{W: &out, N: 1 << 20}); err != nil {
		return engine.KubeEgress{}, fmt.Errorf("reading pod %s's routes (pods/exec): %w", pod, a.explain(err, "create", "pods/exec"))
	}
	var tables struct {
		Route     string `json:"route"`
		IPv6Route string `json:"ipv6_route"`
	}
	if err := json.Unmarshal(out.Bytes(), &tables); err != nil {
		return engine.KubeEgress{}, fmt.Errorf("reading pod %s's routes: %w: %q", pod, err, out.String())
	}
	e, err := EgressOf(tables.Route, tables.IPv6Route, nil, nil)
	if err != nil || e.Verdict == engine.KubeNoRouteOut {
		return e, err
	}
	p, err := a.cs.CoreV1().Pods(a.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return engine.KubeEgress{}, fmt.Errorf("reading pod %s's labels: %w", pod, a.explain(err, "get", "pods"))
	}
	pols, err := a.cs.NetworkingV1().NetworkPolicies(a.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return engine.KubeEgress{}, fmt.Errorf("listing network policies: %w", a.explain(err, "list", "networkpolicies"))
	}
	return EgressOf(tables.Route, tables.IPv6Route, pols.Items, p.Labels)
}

var _ engine.EgressChecker = (*Kubernetes)(nil)
