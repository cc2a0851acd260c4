package kube

import (
	"context"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An authorizationSSAR asks the API server what this identity may do
// (SelfSubjectAccessReview), which every authenticated identity may ask.
type authorizationSSAR struct{}

// can reports whether this identity may verb resource (its subresource
// sub, when set) in namespace ns, and the server's reason when not.
func (authorizationSSAR) can(ctx context.Context, cs kubernetes.Interface, ns, verb, resource, sub string) (bool, string, error) {
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
		Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Resource: resource, Subresource: sub,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	why := r.Status.Reason
	if why == "" {
		why = "RBAC grants it no role that allows it"
	}
	return r.Status.Allowed, why, nil
}

// kubeCheckHardened checks a pod as the API server holds it (after any
// admission webhook) against what kubePod built for spec: a pod whose
// hardening was weakened is refused.
func kubeCheckHardened(p *corev1.Pod, spec engine.Spec) error {
	if why := kubeWeakened(p, spec); why != "" {
		return fmt.Errorf("pod %s is not hardened as the bridge built it (an admission controller changed it?): %s", p.Name, why)
	}
	return nil
}

// kubeWeakened says how p is less hardened than what kubePod builds for
// spec, or returns "".
func kubeWeakened(p *corev1.Pod, spec engine.Spec) string {
	spec = spec.WithDefaults()
	bad := func(what string) string { return what }
	inits := 0
	if spec.Input != nil && spec.InBytes > 0 {
		inits = 1 // the input container
	}
	if len(p.Spec.Containers) != 1 || len(p.Spec.InitContainers) != inits || len(p.Spec.EphemeralContainers) != 0 {
		return bad("it has other containers")
	}
	if p.Spec.HostNetwork || p.Spec.HostPID || p.Spec.HostIPC {
		return bad("it shares a host namespace")
	}
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		return bad("it mounts a service-account token")
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return bad("its restart policy is not Never")
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil {
			return bad("volume " + v.Name + " is not an emptyDir")
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name != kubeInputContainer {
			return bad("it has other containers")
		}
		if why := kubeContainerWeakened(c, spec); why != "" {
			return bad("its input " + why)
		}
		for _, m := range c.VolumeMounts {
			if m.Name != "in" || m.MountPath != engine.InDir {
				return bad("its input container mounts " + m.MountPath)
			}
		}
	}
	c := p.Spec.Containers[0]
	if why := kubeContainerWeakened(c, spec); why != "" {
		return bad("its " + why)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == engine.InDir && !m.ReadOnly {
			return bad("its container may write " + engine.InDir)
		}
	}
	return ""
}

// kubeContainerWeakened says how c is less hardened than kubePod builds
// the containers of spec's pod, or returns "".
func kubeContainerWeakened(c corev1.Container, spec engine.Spec) string {
	sc := c.SecurityContext
	uid, _ := kubeIDs(spec.User)
	switch {
	case sc == nil:
		return "container has no security context"
	case sc.Privileged != nil && *sc.Privileged:
		return "container is privileged"
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		return "container may escalate privileges"
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		return "container's root filesystem is writable"
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != uid:
		return "container does not run as the sandbox user"
	case sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 || !kubeDropsAll(sc.Capabilities.Drop):
		return "container keeps capabilities"
	case c.Resources.Limits.Memory().Value() != spec.MemoryBytes:
		return "container's memory limit is not the sandbox's"
	}
	return ""
}

// kubeDropsAll reports whether drop holds ALL.
func kubeDropsAll(drop []corev1.Capability) bool {
	for _, c := range drop {
		if c == "ALL" {
			return true
		}
	}
	return false
}
