package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// checkTemplate reads the template and refuses it as kubeTemplateRefused
// says.
func (k *kubeClaims) checkTemplate(ctx context.Context, a *kubeAPI, spec engine.Spec) error {
	u, err := k.dyn.Resource(kubeTemplateGVR).Namespace(k.ns).Get(ctx, k.template, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("reading SandboxTemplate %q in namespace %q: it does not exist, or agent-sandbox's CRDs are not installed (scripts/provision --kubernetes --agent-sandbox): %w", k.template, k.ns, err)
	}
	if err != nil {
		return fmt.Errorf("reading SandboxTemplate %q: %w", k.template, a.explain(err, "get", "sandboxtemplates"))
	}
	var t kubeTemplateSpec
	if err := kubeFromUnstructured(u, "spec", &t); err != nil {
		return fmt.Errorf("reading SandboxTemplate %q: %w", k.template, err)
	}
	if why := kubeTemplateRefused(&t, spec, a.pod); why != "" {
		return k.refused(why)
	}
	return nil
}

// Create checks the template, then claims a pod from it for spec, owned
// by o, and returns the pod's name once it exists. A claim whose pod
// does not come is deleted.
func (k *kubeClaims) Create(ctx context.Context, a *kubeAPI, spec engine.Spec, o lifecycle.Owner) (string, error) {
	if spec.Input != nil && spec.InBytes > 0 {
		return "", fmt.Errorf("claiming a pod: %w", errKubeClaimInput)
	}
	if err := k.checkTemplate(ctx, a, spec); err != nil {
		return "", err
	}
	claim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kubeClaimGVR.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata":   map[string]any{"name": kubePodName(spec.Session), "namespace": k.ns},
		"spec":       map[string]any{"sandboxTemplateRef": map[string]any{"name": k.template}},
	}}
	claim.SetLabels(kubeLabels(lifecycle.Labels(spec, o)))
	claims := k.dyn.Resource(kubeClaimGVR).Namespace(k.ns)
	began := time.Now()
	got, err := claims.Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating SandboxClaim: %w", a.explain(err, "create", "sandboxclaims"))
	}
	pod, err := k.podOf(ctx, a, got)
	if err != nil {
		k.deleteClaim(context.WithoutCancel(ctx), got.GetName())
		return "", err
	}
	k.mu.Lock()
	k.pods[pod.Name] = kubeClaimed{claim: got.GetName(), uid: pod.UID}
	k.mu.Unlock()
	a.log.Debug("claimed a pod", "claim", got.GetName(), "template", k.template, "pod", pod.Name, "waited", time.Since(began))
	return pod.Name, nil
}

// podOf waits for the pod of claim to exist (labelled with its UID), and
// returns it; it reports a claim the controller says it cannot serve.
func (k *kubeClaims) podOf(ctx context.Context, a *kubeAPI, claim *unstructured.Unstructured) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, kubeClaimWithin)
	defer cancel()
	uid := string(claim.GetUID())
	opts := metav1.ListOptions{LabelSelector: kubeClaimUIDLabel + "=" + uid}
	pods := a.cs.CoreV1().Pods(k.ns)
	ours := func(p *corev1.Pod) bool { return p.Labels[kubeClaimUIDLabel] == uid && p.DeletionTimestamp == nil }
	failed := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("SandboxClaim %s of SandboxTemplate %q got no pod within %v (does agent-sandbox's controller run, with --extensions?): %w",
				claim.GetName(), k.template, kubeClaimWithin, ctx.Err())
		}
		return fmt.Errorf("finding the pod of SandboxClaim %s: %w", claim.GetName(), err)
	}
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		list, err := pods.List(ctx, opts)
		if err != nil {
			return nil, failed(a.explain(err, "list", "pods"))
		}
		for i := range list.Items {
			if ours(&list.Items[i]) {
				return &list.Items[i], nil
			}
		}
		wopts := opts
		wopts.ResourceVersion = list.ResourceVersion
		w, err := pods.Watch(ctx, wopts)
		if err != nil {
			return nil, failed(a.explain(err, "watch", "pods"))
		}
	events:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || ev.Type == watch.Error {
					break events // list again
				}
				if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted && ours(p) {
					w.Stop()
					return p, nil
				}
			case <-check.C:
				if why := k.claimFailed(ctx, claim.GetName()); why != "" {
					w.Stop()
					return nil, fmt.Errorf("SandboxClaim %s of SandboxTemplate %q: %s", claim.GetName(), k.template, why)
				}
			case <-ctx.Done():
				w.Stop()
				return nil, failed(ctx.Err())
			}
		}
		w.Stop()
		select { // the server ended the watch: list again, soon
		case <-ctx.Done():
			return nil, failed(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Verify checks the claimed pod name: still the pod that was claimed, and
// hardened as kubeClaimWeakened requires.
func (k *kubeClaims) Verify(ctx context.Context, a *kubeAPI, name string, spec engine.Spec) error {
	c, _ := k.claimed(name)
	p, err := a.cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return a.explain(err, "get", "pods")
	}
	if p.UID != c.uid {
		return fmt.Errorf("pod %s of SandboxClaim %s: %w", name, c.claim, errPodReplaced)
	}
	if why := kubeClaimWeakened(p, spec, a.pod); why != "" {
		return k.refused(fmt.Sprintf("its pod %s: %s", name, why))
	}
	return nil
}

// Remove deletes the claim of pod name and reports whether it found one:
// the claim this process made, or, for a pod it did not claim (one
// another replica claimed and this one resumed), the bridge's claim
// whose UID the pod's kubeClaimUIDLabel names. The caller deletes the
// pod at once rather than waiting for the garbage collector.
func (k *kubeClaims) Remove(ctx context.Context, a *kubeAPI, name string) (bool, error) {
	if k == nil {
		return false, nil
	}
	c, ok := k.claimed(name)
	if !ok {
		c.claim = k.claimOfPod(ctx, a, name)
		if c.claim == "" {
			return false, nil
		}
	}
	if err := k.deleteClaim(ctx, c.claim); err != nil {
		return true, a.explain(err, "delete", "sandboxclaims")
	}
	k.mu.Lock()
	delete(k.pods, name)
	k.mu.Unlock()
	return true, nil
}

// claimOfPod returns the name of the bridge's claim that pod name was
// given to, or "" when it has none (or either cannot be read).
func (k *kubeClaims) claimOfPod(ctx context.Context, a *kubeAPI, name string) string {
	p, err := a.cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.Labels[kubeClaimUIDLabel] == "" {
		return ""
	}
	l, err := k.dyn.Resource(kubeClaimGVR).Namespace(k.ns).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelBridge + "=1"})
	if err != nil {
		return ""
	}
	for _, c := range l.Items {
		if string(c.GetUID()) == p.Labels[kubeClaimUIDLabel] {
			return c.GetName()
		}
	}
	return ""
}
