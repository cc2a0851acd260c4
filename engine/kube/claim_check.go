package kube

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

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
