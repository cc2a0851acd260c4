package engine

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels of the containers of a bridge that runs in a pod. There, every
// replica is PID 1 on a node whose name they share: the host and process
// cannot tell replicas apart, so the pod owns its containers.
const (
	// LabelPodNamespace is the namespace of the bridge's pod.
	LabelPodNamespace = LabelBridge + ".pod-namespace"
	// LabelPodName is the bridge pod's name.
	LabelPodName = LabelBridge + ".pod-name"
	// LabelPodUID is the bridge pod's UID: a pod of the same name made
	// again (a StatefulSet's) is another owner.
	LabelPodUID = LabelBridge + ".pod-uid"
)

// A PodRef names a pod of the cluster: the one a bridge runs in, from the
// downward API (metadata.namespace, metadata.name, metadata.uid).
type PodRef struct {
	Namespace, Name, UID string
}

// String returns "namespace/name (uid)".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name + " (" + p.UID + ")" }

// label adds the pod's labels to l; a zero PodRef adds none.
func (p PodRef) label(l map[string]string) {
	if p == (PodRef{}) {
		return
	}
	l[LabelPodNamespace], l[LabelPodName], l[LabelPodUID] = p.Namespace, p.Name, p.UID
}

// podOf returns the pod that labels name as the owner, if they name one.
func podOf(labels map[string]string) (PodRef, bool) {
	p := PodRef{Namespace: labels[LabelPodNamespace], Name: labels[LabelPodName], UID: labels[LabelPodUID]}
	return p, p.UID != ""
}

// podLookupTimeout bounds one owner pod's lookup in the orphan clean-up.
const podLookupTimeout = 10 * time.Second

// podAlive reports whether the bridge pod p still exists: a pod of its
// namespace and name with its UID. Only an answer that it does not (not
// found, or found with another UID) makes it gone; an error (no access to
// the bridge's namespace, an API server away) leaves it alive, and its
// containers alone.
func (a *kubeAPI) podAlive(ctx context.Context, p PodRef) bool {
	ctx, cancel := context.WithTimeout(ctx, podLookupTimeout)
	defer cancel()
	got, err := a.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		a.log.Warn("orphan clean-up: cannot tell whether a bridge pod still runs; its sandboxes are left alone",
			"pod", p.String(), "err", a.explain(err, "get", "pods"))
		return true
	}
	return string(got.UID) == p.UID
}

// podsGone returns the test of whether an owner pod is gone for one
// clean-up pass: each pod is looked up once, through alive.
func podsGone(ctx context.Context, alive func(context.Context, PodRef) bool) func(PodRef) bool {
	if alive == nil {
		return nil
	}
	seen := map[PodRef]bool{}
	return func(p PodRef) bool {
		gone, ok := seen[p]
		if !ok {
			gone = !alive(ctx, p)
			seen[p] = gone
		}
		return gone
	}
}
