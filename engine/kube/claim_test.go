package kube

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// claimSpec is the spec of the sandboxes of the claim tests.
var claimSpec = engine.Spec{Cmd: []string{"python3", "-u", "-c", "runtime"}, Session: "s1"}

// goodTemplate returns a template whose pod is the one kubePod builds
// for claimSpec, with an empty (deny-all) network policy.
func goodTemplate() kubeTemplateSpec {
	var t kubeTemplateSpec
	t.PodTemplate.Spec = kubePod(claimSpec, lifecycle.Owner{}, "x", kubePodOptions{}).Spec
	t.NetworkPolicy = &struct {
		Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
		Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
	}{}
	return t
}

// templateObject returns t as the SandboxTemplate "tpl" of namespace sbx.
func templateObject(t *testing.T, spec kubeTemplateSpec) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	u.SetAPIVersion(kubeTemplateGVR.GroupVersion().String())
	u.SetKind("SandboxTemplate")
	u.SetNamespace("sbx")
	u.SetName("tpl")
	return u
}

// fakeClaims returns a kubeAPI whose sandboxes are claims of template
// tpl, and whose fake controller answers each claim by labelling the
// warm pod "warm-CLAIM" (built from the template) with the claim's UID.
func fakeClaims(t *testing.T, tpl kubeTemplateSpec) (*kubeAPI, *fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	a, cs := fakeKube()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kubeClaimGVR: "SandboxClaimList", kubeTemplateGVR: "SandboxTemplateList",
	}, templateObject(t, tpl))
	dyn.PrependReactor("create", "sandboxclaims", func(act k8stesting.Action) (bool, runtime.Object, error) {
		u := act.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		u.SetUID(types.UID("claim-uid-" + u.GetName()))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "warm-" + u.GetName(), Namespace: "sbx", UID: "pod-uid-1",
			Labels: map[string]string{kubeClaimUIDLabel: string(u.GetUID())}}, Spec: tpl.PodTemplate.Spec}
		if err := cs.Tracker().Add(pod); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	a.claims = newKubeClaims(dyn, "sbx", "tpl")
	return a, cs, dyn
}

func TestKubeClaimCreate(t *testing.T) {
	a, cs, dyn := fakeClaims(t, goodTemplate())
	ctx := context.Background()
	o := lifecycle.Owner{Host: "h", PID: 7, Start: "1"}
	id, err := a.Create(ctx, claimSpec, o, "")
	if err != nil || !strings.HasPrefix(id, "warm-mcp-sbx-s1-") {
		t.Fatalf("create: %q %v", id, err)
	}
	claims, err := dyn.Resource(kubeClaimGVR).Namespace("sbx").List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 1 {
		t.Fatalf("claims: %v %v", claims, err)
	}
	c := claims.Items[0]
	want := kubeLabels(lifecycle.Labels(claimSpec, o))
	for k, v := range want {
		if c.GetLabels()[k] != v {
			t.Errorf("claim label %s = %q, want %q", k, c.GetLabels()[k], v)
		}
	}
	if ref, _, _ := unstructured.NestedString(c.Object, "spec", "sandboxTemplateRef", "name"); ref != "tpl" || !strings.HasPrefix(c.GetName(), "mcp-sbx-s1-") {
		t.Fatalf("claim %s of template %q", c.GetName(), ref)
	}
	if err := a.Verify(ctx, id, claimSpec); err != nil {
		t.Fatalf("verify of the claimed pod: %v", err)
	}
	if ops := a.Ops(id).(*kubeContainerOps); ops.uid != "pod-uid-1" {
		t.Fatalf("the pod's UID is not pinned: %q", ops.uid)
	}
	if err := a.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	claims, _ = dyn.Resource(kubeClaimGVR).Namespace("sbx").List(ctx, metav1.ListOptions{})
	pods, _ := cs.CoreV1().Pods("sbx").List(ctx, metav1.ListOptions{})
	if len(claims.Items) != 0 || len(pods.Items) != 0 {
		t.Fatalf("after remove: %d claims, %d pods", len(claims.Items), len(pods.Items))
	}
	if _, err := a.Create(ctx, engine.Spec{Cmd: claimSpec.Cmd, Input: func(w io.Writer) error { return nil }, InBytes: 1}, o, ""); !errors.Is(err, errKubeClaimInput) {
		t.Fatalf("a claim with input: %v", err)
	}
}

func TestKubeClaimTemplateRefused(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		change     func(*kubeTemplateSpec)
	}{
		{"root", "sandbox user", func(t *kubeTemplateSpec) { t.PodTemplate.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil }},
		{"escalation", "escalate", func(t *kubeTemplateSpec) {
			yes := true
			t.PodTemplate.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes
		}},
		{"capabilities", "capabilities", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_RAW"}
		}},
		{"token", "service-account token", func(t *kubeTemplateSpec) { t.PodTemplate.Spec.AutomountServiceAccountToken = nil }},
		{"host network", "host namespace", func(t *kubeTemplateSpec) { t.PodTemplate.Spec.HostNetwork = true }},
		{"seccomp", "seccomp", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.SecurityContext.SeccompProfile = nil
			t.PodTemplate.Spec.Containers[0].SecurityContext.SeccompProfile = nil
		}},
		{"restart always", "restartPolicy is \"Always\"", func(t *kubeTemplateSpec) { t.PodTemplate.Spec.RestartPolicy = corev1.RestartPolicyAlways }},
		{"restart on failure", "restartPolicy is \"OnFailure\"", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}},
		{"managed without a policy", "egress to the Internet", func(t *kubeTemplateSpec) { t.NetworkPolicy = nil }},
		{"managed with egress", "spec.networkPolicy allows traffic", func(t *kubeTemplateSpec) {
			t.NetworkPolicy.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		}},
		{"unmanaged unselected", "Unmanaged but", func(t *kubeTemplateSpec) { t.NetworkPolicyManagement = "Unmanaged" }},
		{"command", "command is not the bridge's runtime", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.Containers[0].Command = []string{"sleep", "infinity"}
		}},
		{"container name", "named \"main\"", func(t *kubeTemplateSpec) { t.PodTemplate.Spec.Containers[0].Name = "main" }},
		{"rlimits", kubeRlimitsEnv, func(t *kubeTemplateSpec) { t.PodTemplate.Spec.Containers[0].Env = nil }},
		{"host port", "host port", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}},
		{"secret env", "envFrom or valueFrom", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "api-keys"}}}}
		}},
		{"sysctls", "sysctls", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}
		}},
		{"unmasked proc", "unmasked", func(t *kubeTemplateSpec) {
			m := corev1.UnmaskedProcMount
			t.PodTemplate.Spec.Containers[0].SecurityContext.ProcMount = &m
		}},
		{"volume", "not an emptyDir", func(t *kubeTemplateSpec) {
			t.PodTemplate.Spec.Volumes = append(t.PodTemplate.Spec.Volumes, corev1.Volume{Name: "host",
				VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := goodTemplate()
			tc.change(&tpl)
			a, _, dyn := fakeClaims(t, tpl)
			_, err := a.Create(context.Background(), claimSpec, lifecycle.Owner{Host: "h", PID: 7}, "")
			if err == nil || !strings.Contains(err.Error(), `SandboxTemplate "tpl"`) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a refusal of the template naming %q: %v", tc.want, err)
			}
			claims, _ := dyn.Resource(kubeClaimGVR).Namespace("sbx").List(context.Background(), metav1.ListOptions{})
			if len(claims.Items) != 0 {
				t.Fatalf("a refused template was claimed from")
			}
		})
	}
	// Unmanaged, with the label the deny-all policy selects: accepted.
	tpl := goodTemplate()
	tpl.NetworkPolicy, tpl.NetworkPolicyManagement = nil, "Unmanaged"
	tpl.PodTemplate.Metadata.Labels = map[string]string{engine.LabelBridge: "1"}
	a, _, _ := fakeClaims(t, tpl)
	if _, err := a.Create(context.Background(), claimSpec, lifecycle.Owner{Host: "h", PID: 7}, ""); err != nil {
		t.Fatalf("an unmanaged template whose pods the deny-all policy selects: %v", err)
	}
	// A runtime class the bridge was told to use, which the template lacks.
	a, _, _ = fakeClaims(t, goodTemplate())
	a.pod.RuntimeClass = "gvisor"
	if _, err := a.Create(context.Background(), claimSpec, lifecycle.Owner{}, ""); err == nil || !strings.Contains(err.Error(), "runtimeClassName") {
		t.Fatalf("a template without the runtime class: %v", err)
	}
}

// TestKubeClaimRemoveResumed: a pod another bridge process claimed (this
// one resumed it: it has no record of the claim) is removed with its
// claim, found by the UID its label names.
func TestKubeClaimRemoveResumed(t *testing.T) {
	a, cs, dyn := fakeClaims(t, goodTemplate())
	ctx := context.Background()
	id, err := a.Create(ctx, claimSpec, lifecycle.Owner{Host: "h", PID: 7}, "")
	if err != nil {
		t.Fatal(err)
	}
	other := newKubeClaims(dyn, "sbx", "tpl") // another process's, over the same API
	a.claims, a.pod = other, kubePodOptions{Namespace: "sbx"}
	if err := a.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	claims, _ := dyn.Resource(kubeClaimGVR).Namespace("sbx").List(ctx, metav1.ListOptions{})
	pods, _ := cs.CoreV1().Pods("sbx").List(ctx, metav1.ListOptions{})
	if len(claims.Items) != 0 || len(pods.Items) != 0 {
		t.Fatalf("after remove by another process: %d claims, %d pods", len(claims.Items), len(pods.Items))
	}
}

// TestKubeClaimControllerFails: a claim the controller reports it cannot
// serve (its Ready condition's reason) is an error saying why, and is
// deleted.
func TestKubeClaimControllerFails(t *testing.T) {
	a, _ := fakeKube()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kubeClaimGVR: "SandboxClaimList", kubeTemplateGVR: "SandboxTemplateList",
	}, templateObject(t, goodTemplate()))
	dyn.PrependReactor("create", "sandboxclaims", func(act k8stesting.Action) (bool, runtime.Object, error) {
		u := act.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False",
			"reason": "ReconcilerError", "message": "Error seen: boom"}}, "status", "conditions")
		return false, nil, nil
	})
	a.claims = newKubeClaims(dyn, "sbx", "tpl")
	_, err := a.Create(context.Background(), claimSpec, lifecycle.Owner{}, "")
	if err == nil || !strings.Contains(err.Error(), "ReconcilerError: Error seen: boom") {
		t.Fatalf("a claim the controller fails: %v", err)
	}
	claims, _ := dyn.Resource(kubeClaimGVR).Namespace("sbx").List(context.Background(), metav1.ListOptions{})
	if len(claims.Items) != 0 {
		t.Fatalf("the failed claim was left: %v", claims.Items)
	}
}

// TestKubeClaimWarmPodWeakened: a warm pod made from an older version of
// the template is checked too, after the claim.
func TestKubeClaimWarmPodWeakened(t *testing.T) {
	a, cs, _ := fakeClaims(t, goodTemplate())
	ctx := context.Background()
	id, err := a.Create(ctx, claimSpec, lifecycle.Owner{}, "")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cs.CoreV1().Pods("sbx").Get(ctx, id, metav1.GetOptions{})
	p.Spec.HostPID = true
	cs.CoreV1().Pods("sbx").Update(ctx, p, metav1.UpdateOptions{})
	if err := a.Verify(ctx, id, claimSpec); err == nil || !strings.Contains(err.Error(), `SandboxTemplate "tpl"`) || !strings.Contains(err.Error(), "host namespace") {
		t.Fatalf("verify of a weakened warm pod: %v", err)
	}
}

// TestKubeClaimPodReplaced: a claimed pod made again under the same name
// (another UID) is a lost sandbox: refused by verify, and the end of the
// sandbox for wait, never attached to.
func TestKubeClaimPodReplaced(t *testing.T) {
	a, cs, _ := fakeClaims(t, goodTemplate())
	ctx := context.Background()
	id, err := a.Create(ctx, claimSpec, lifecycle.Owner{}, "")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cs.CoreV1().Pods("sbx").Get(ctx, id, metav1.GetOptions{})
	cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "sbx", id)
	p.UID, p.ResourceVersion = "pod-uid-2", ""
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: kubeContainer,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	if err := cs.Tracker().Add(p); err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(ctx, id, claimSpec); !errors.Is(err, errPodReplaced) {
		t.Fatalf("verify of a replaced pod: %v", err)
	}
	ops := a.Ops(id).(*kubeContainerOps)
	if err := ops.running(ctx); !errors.Is(err, errPodReplaced) {
		t.Fatalf("running of a replaced pod: %v", err)
	}
	st, gone, err := ops.waitPod(ctx)
	if err != nil || !gone || st.Code != 137 || !strings.Contains(st.EngineError, "sandbox was lost") {
		t.Fatalf("wait of a replaced pod: %+v %v %v", st, gone, err)
	}
}

// TestKubeClaimOrphans: the claims of a bridge process of this host that
// no longer runs are deleted; those of live processes and other hosts
// are kept.
func TestKubeClaimOrphans(t *testing.T) {
	a, _, dyn := fakeClaims(t, goodTemplate())
	ctx := context.Background()
	me := lifecycle.CurrentOwner()
	dead := lifecycle.Owner{Host: me.Host, PID: 1 << 30, Start: "1"}
	other := lifecycle.Owner{Host: "elsewhere", PID: 1 << 30, Start: "1"}
	for name, o := range map[string]lifecycle.Owner{"dead": dead, "mine": me, "other": other} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(kubeClaimGVR.GroupVersion().String())
		u.SetKind("SandboxClaim")
		u.SetName(name)
		u.SetLabels(kubeLabels(lifecycle.Labels(engine.Spec{Session: name}, o)))
		if _, err := dyn.Resource(kubeClaimGVR).Namespace("sbx").Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := lifecycle.NewEngine(engine.BackendKubernetes, "fake", a, lifecycle.LoggerOrDiscard(nil), 0)
	e.Owner = me
	a.claims.RemoveOrphans(ctx, e)
	l, _ := dyn.Resource(kubeClaimGVR).Namespace("sbx").List(ctx, metav1.ListOptions{})
	var left []string
	for _, c := range l.Items {
		left = append(left, c.GetName())
	}
	if strings.Join(left, ",") != "mine,other" {
		t.Fatalf("claims left: %v", left)
	}
}
