package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An EgressChecker is an Engine whose sandboxes are pods, which can tell
// whether they have a way out of their network (doctor asks). Kubernetes
// and Auto are EgressCheckers.
type EgressChecker interface {
	// CheckEgress starts a sandbox from spec, reads its routes from
	// inside, holds them against the NetworkPolicies that select it and
	// removes it; it sends no traffic.
	CheckEgress(ctx context.Context, spec Spec) (KubeEgress, error)
}

// ErrNotPods reports an engine whose sandboxes are not pods.
var ErrNotPods = errors.New("the engine's sandboxes are not pods")

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
func (k *Kubernetes) CheckEgress(ctx context.Context, spec Spec) (KubeEgress, error) {
	sb, err := k.Start(ctx, spec)
	if err != nil {
		return KubeEgress{}, fmt.Errorf("starting a sandbox pod: %w", err)
	}
	defer sb.Close()
	a, pod := k.api, sb.ID()
	var out bytes.Buffer
	if err := a.execIn(ctx, pod, []string{"python3", "-c", kubeRoutesProgram}, nil, &limitedWriter{w: &out, n: 1 << 20}); err != nil {
		return KubeEgress{}, fmt.Errorf("reading pod %s's routes (pods/exec): %w", pod, a.explain(err, "create", "pods/exec"))
	}
	var tables struct {
		Route     string `json:"route"`
		IPv6Route string `json:"ipv6_route"`
	}
	if err := json.Unmarshal(out.Bytes(), &tables); err != nil {
		return KubeEgress{}, fmt.Errorf("reading pod %s's routes: %w: %q", pod, err, out.String())
	}
	e, err := KubeEgressOf(tables.Route, tables.IPv6Route, nil, nil)
	if err != nil || e.Verdict == KubeNoRouteOut {
		return e, err
	}
	p, err := a.cs.CoreV1().Pods(a.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return KubeEgress{}, fmt.Errorf("reading pod %s's labels: %w", pod, a.explain(err, "get", "pods"))
	}
	pols, err := a.cs.NetworkingV1().NetworkPolicies(a.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return KubeEgress{}, fmt.Errorf("listing network policies: %w", a.explain(err, "list", "networkpolicies"))
	}
	return KubeEgressOf(tables.Route, tables.IPv6Route, pols.Items, p.Labels)
}

// CheckEgress implements EgressChecker: it connects the backend when
// none is connected yet, and fails with ErrNotPods unless it is
// Kubernetes.
func (a *Auto) CheckEgress(ctx context.Context, spec Spec) (KubeEgress, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return KubeEgress{}, err
	}
	k, ok := b.(*Kubernetes)
	if !ok {
		return KubeEgress{}, fmt.Errorf("%s: %w", b.Name(), ErrNotPods)
	}
	return k.CheckEgress(ctx, spec)
}

var (
	_ EgressChecker = (*Kubernetes)(nil)
	_ EgressChecker = (*Auto)(nil)
)
