package kube

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// kubeDenyPolicy names the NetworkPolicy that denies the sandbox pods
// every connection, in and out.
const kubeDenyPolicy = "mcp-sandbox-deny-all"

// denyNetwork makes sure a NetworkPolicy selecting the sandbox pods denies
// them all traffic. A policy is enforced only by a network plugin that
// implements policies, and removes no route: the pods' own lack of a
// route out is what isolates them on a plugin that does not (doctor
// checks it). It logs, and goes on, when this identity may not.
func (a *kubeAPI) denyNetwork(ctx context.Context) {
	pols := a.cs.NetworkingV1().NetworkPolicies(a.ns)
	if _, err := pols.Get(ctx, kubeDenyPolicy, metav1.GetOptions{}); err == nil {
		return
	} else if !apierrors.IsNotFound(err) {
		a.log.Warn("cannot read the sandboxes' deny-all network policy", "namespace", a.ns, "err", err)
		return
	}
	_, err := pols.Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: kubeDenyPolicy, Namespace: a.ns, Labels: map[string]string{engine.LabelBridge: "1"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{engine.LabelBridge: "1"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		a.log.Warn("cannot create the sandboxes' deny-all network policy", "namespace", a.ns, "err", err)
		return
	}
	a.log.Info("created the sandboxes' deny-all network policy", "namespace", a.ns, "policy", kubeDenyPolicy)
}
