package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// With KubernetesOptions.SandboxTemplate, a sandbox is a SandboxClaim of
// kubernetes-sigs/agent-sandbox (v0.2.1, its extensions API group): the
// operator's SandboxTemplate and SandboxWarmPool keep pods ready, and the
// claim takes one (or, when the pool is empty, makes one). The bridge
// reads the template before each claim and refuses it, naming the field,
// when it weakens the pod kubePod would build, when its restart policy
// is not Never, or when its network policy could let the controller
// allow traffic (v0.2.1 gives a managed template without a policy one
// that allows egress to the Internet). The claimed pod is checked again
// (a warm pod may come from an older version of the template); its UID
// is pinned, so that a pod of the same name made again by the
// controller is a lost sandbox, never attached to. The template decides
// the image; its command must be the bridge's runtime (Spec.Cmd), its
// container named "sandbox" with an open standard input, as kubePod
// makes it: the simplest template copies a bridge pod's spec
// (deploy/agent-sandbox/README.md).

// The agent-sandbox resources the bridge uses.
var (
	kubeClaimGVR    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1alpha1", Resource: "sandboxclaims"}
	kubeTemplateGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1alpha1", Resource: "sandboxtemplates"}
)

const (
	// kubeClaimUIDLabel is the label agent-sandbox puts on a claimed
	// pod: its claim's UID.
	kubeClaimUIDLabel = "agents.x-k8s.io/claim-uid"
	// kubeClaimWithin bounds the wait for a claim's pod to exist: the
	// controller adopts a warm pod, or creates one, in well under it.
	kubeClaimWithin = 30 * time.Second
)

// errKubeClaimInput refuses Spec.Input on a claimed pod, which has no
// input container.
var errKubeClaimInput = errors.New("a pod claimed from a SandboxTemplate takes no input files (MCP_BRIDGE_INPUT_DIR): unset one of them")

// errPodReplaced reports a claimed pod found with another UID than the
// one claimed: deleted and made again by the controller, without the
// sandbox's state.
var errPodReplaced = errors.New("the pod was deleted and made again: the sandbox was lost")

// A kubeClaims makes the Kubernetes backend's sandboxes SandboxClaims of
// one SandboxTemplate.
type kubeClaims struct {
	dyn      dynamic.Interface
	ns       string
	template string

	mu   sync.Mutex
	pods map[string]kubeClaimed // by pod name
}

// A kubeClaimed is a pod a claim of this process took.
type kubeClaimed struct {
	claim string
	uid   types.UID // the pod's
}

// newKubeClaims returns the claims of template in namespace ns.
func newKubeClaims(dyn dynamic.Interface, ns, template string) *kubeClaims {
	return &kubeClaims{dyn: dyn, ns: ns, template: template, pods: map[string]kubeClaimed{}}
}

// A kubeTemplateSpec is what the bridge reads of a SandboxTemplate's
// spec (agent-sandbox v0.2.1's field names).
type kubeTemplateSpec struct {
	PodTemplate struct {
		Metadata struct {
			Labels map[string]string `json:"labels,omitempty"`
		} `json:"metadata"`
		Spec corev1.PodSpec `json:"spec"`
	} `json:"podTemplate"`
	NetworkPolicy *struct {
		Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
		Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
	} `json:"networkPolicy,omitempty"`
	NetworkPolicyManagement string `json:"networkPolicyManagement,omitempty"`
}

// claimed returns the claim of pod name, if this process made it.
func (k *kubeClaims) claimed(name string) (kubeClaimed, bool) {
	if k == nil {
		return kubeClaimed{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.pods[name]
	return c, ok
}

// uid returns the pinned UID of pod name, or "" when it is not claimed.
func (k *kubeClaims) uid(name string) types.UID {
	c, _ := k.claimed(name)
	return c.uid
}

// refused returns the error of a template refused for why.
func (k *kubeClaims) refused(why string) error {
	return fmt.Errorf("SandboxTemplate %q (MCP_BRIDGE_K8S_SANDBOX_TEMPLATE) is refused: %s", k.template, why)
}

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

// kubeFromUnstructured decodes field of u into v.
func kubeFromUnstructured(u *unstructured.Unstructured, field string, v any) error {
	m, _, err := unstructured.NestedMap(u.Object, field)
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, v)
}

// kubeTemplateRefused says why a template t is refused for pods of spec,
// naming the field, or returns "".
func kubeTemplateRefused(t *kubeTemplateSpec, spec engine.Spec, opts kubePodOptions) string {
	ps := t.PodTemplate.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever {
		return fmt.Sprintf("spec.podTemplate.spec.restartPolicy is %q, not Never (a sandbox's state dies with its process)", ps.RestartPolicy)
	}
	switch t.NetworkPolicyManagement {
	case "", "Managed":
		if t.NetworkPolicy == nil {
			return "spec.networkPolicy is not set while spec.networkPolicyManagement is Managed (the default): the controller would give its pods a policy that allows egress to the Internet; set networkPolicy: {} (deny all) or networkPolicyManagement: Unmanaged"
		}
		if len(t.NetworkPolicy.Ingress) > 0 || len(t.NetworkPolicy.Egress) > 0 {
			return "spec.networkPolicy allows traffic (its ingress or egress rules are not empty): a sandbox has no network"
		}
	case "Unmanaged":
		if t.PodTemplate.Metadata.Labels[engine.LabelBridge] != "1" {
			return fmt.Sprintf("spec.networkPolicyManagement is Unmanaged but spec.podTemplate.metadata.labels lacks %s: \"1\", which the namespace's deny-all policy %s selects", engine.LabelBridge, kubeDenyPolicy)
		}
	default:
		return fmt.Sprintf("spec.networkPolicyManagement is %q, neither Managed nor Unmanaged", t.NetworkPolicyManagement)
	}
	pod := &corev1.Pod{Spec: ps}
	if why := kubeClaimWeakened(pod, spec, opts); why != "" {
		return "spec.podTemplate.spec: " + why
	}
	return ""
}

// kubeClaimWeakened says how p, a pod claimed from a template, is less
// hardened than what kubePod builds for spec (without input), or cannot
// run the bridge's runtime as kubePod's can; "" when it is not.
func kubeClaimWeakened(p *corev1.Pod, spec engine.Spec, opts kubePodOptions) string {
	spec = spec.WithDefaults()
	spec.Input, spec.InBytes = nil, 0
	if len(p.Spec.InitContainers) > 0 {
		return "it has init containers"
	}
	if why := kubeWeakened(p, spec); why != "" {
		return why
	}
	c := p.Spec.Containers[0]
	class := ""
	if p.Spec.RuntimeClassName != nil {
		class = *p.Spec.RuntimeClassName
	}
	rlimits := kubeRlimits(spec, kubePodOptions{RuntimeClass: class})
	switch {
	case c.Name != kubeContainer:
		return fmt.Sprintf("its container is named %q, not %q", c.Name, kubeContainer)
	case !c.Stdin || c.StdinOnce || c.TTY:
		return "its container's standard input is not kept open (want stdin: true, stdinOnce: false, tty: false)"
	case !slices.Equal(c.Command, spec.Cmd) || len(c.Args) > 0:
		return "its container's command is not the bridge's runtime (copy it from a pod the bridge made)"
	case !kubeSeccomped(p, c):
		return "its container has no seccomp profile (RuntimeDefault or Localhost)"
	case opts.RuntimeClass != "" && class != opts.RuntimeClass:
		return fmt.Sprintf("its runtimeClassName is %q, not %q (MCP_BRIDGE_K8S_RUNTIME_CLASS)", class, opts.RuntimeClass)
	case kubeEnv(c, kubeRlimitsEnv) != rlimits:
		return fmt.Sprintf("its container's %s is %q, not %q", kubeRlimitsEnv, kubeEnv(c, kubeRlimitsEnv), rlimits)
	}
	if why := kubeClaimExtras(p, c); why != "" {
		return why
	}
	if spec.NanoCPUs > 0 {
		limit, ok := c.Resources.Limits[corev1.ResourceCPU]
		if !ok || limit.MilliValue() > spec.NanoCPUs/1_000_000 {
			return "its container's CPU limit is not within the sandbox's"
		}
	}
	return ""
}

// kubeClaimExtras says what p (or its container c) holds that kubePod
// never builds and a foreign pod spec may: a host port, secrets or other
// objects' values in the environment, an unmasked /proc, sysctls, an
// unconfined AppArmor profile, raw devices; "" when it holds none.
func kubeClaimExtras(p *corev1.Pod, c corev1.Container) string {
	for _, port := range c.Ports {
		if port.HostPort != 0 {
			return "its container has a host port"
		}
	}
	if len(c.EnvFrom) > 0 || slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.ValueFrom != nil }) {
		return "its container's environment takes values from other objects (envFrom or valueFrom: secrets reach the sandbox's code)"
	}
	if len(c.VolumeDevices) > 0 {
		return "its container has raw block devices"
	}
	unconfined := func(a *corev1.AppArmorProfile) bool {
		return a != nil && a.Type == corev1.AppArmorProfileTypeUnconfined
	}
	if sc := c.SecurityContext; sc != nil && (sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount || unconfined(sc.AppArmorProfile)) {
		return "its container's /proc is unmasked or its AppArmor profile is Unconfined"
	}
	if psc := p.Spec.SecurityContext; psc != nil && (len(psc.Sysctls) > 0 || unconfined(psc.AppArmorProfile)) {
		return "its pod sets sysctls or an Unconfined AppArmor profile"
	}
	return ""
}

// kubeSeccomped reports whether c of p runs under a seccomp profile.
func kubeSeccomped(p *corev1.Pod, c corev1.Container) bool {
	prof := (*corev1.SeccompProfile)(nil)
	if p.Spec.SecurityContext != nil {
		prof = p.Spec.SecurityContext.SeccompProfile
	}
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		prof = c.SecurityContext.SeccompProfile
	}
	return prof != nil && (prof.Type == corev1.SeccompProfileTypeRuntimeDefault || prof.Type == corev1.SeccompProfileTypeLocalhost)
}

// kubeEnv returns the value of c's variable name ("" when unset).
func kubeEnv(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
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

// claimFailed returns the controller's reason for not serving claim name
// (its Ready condition's, when it is an error), or "".
func (k *kubeClaims) claimFailed(ctx context.Context, name string) string {
	u, err := k.dyn.Resource(kubeClaimGVR).Namespace(k.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		reason, _ := m["reason"].(string)
		if m["type"] == "Ready" && (reason == "TemplateNotFound" || reason == "ReconcilerError") {
			msg, _ := m["message"].(string)
			return reason + ": " + msg
		}
	}
	return ""
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

// deleteClaim deletes claim name (and so its Sandbox and pod); a claim
// already gone is no error.
func (k *kubeClaims) deleteClaim(ctx context.Context, name string) error {
	bg := metav1.DeletePropagationBackground
	err := k.dyn.Resource(kubeClaimGVR).Namespace(k.ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// list returns the claims of every bridge process in the namespace.
func (k *kubeClaims) list(ctx context.Context) ([]engine.SandboxInfo, error) {
	l, err := k.dyn.Resource(kubeClaimGVR).Namespace(k.ns).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelBridge + "=1"})
	if err != nil {
		return nil, fmt.Errorf("listing SandboxClaims: %w", err)
	}
	out := make([]engine.SandboxInfo, 0, len(l.Items))
	for _, c := range l.Items {
		out = append(out, engine.SandboxInfo{ID: c.GetName(), Labels: c.GetLabels(), State: "running"})
	}
	return out, nil
}

// RemoveOrphans deletes the claims of bridge processes that no longer
// run, as e's removeOrphans removes their pods.
func (k *kubeClaims) RemoveOrphans(ctx context.Context, e *lifecycle.Engine) {
	lifecycle.RemoveOrphaned(ctx, e, "claim", "claim", k.list,
		func(c engine.SandboxInfo) (string, map[string]string) { return c.ID, c.Labels }, k.deleteClaim)
}
