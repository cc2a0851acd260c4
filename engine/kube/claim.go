package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
