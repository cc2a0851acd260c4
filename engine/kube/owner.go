package kube

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// podLookupTimeout bounds one owner pod's lookup in the orphan clean-up.
const podLookupTimeout = 10 * time.Second

// podAlive reports whether the bridge pod p still exists: a pod of its
// namespace and name with its UID. Only an answer that it does not (not
// found, or found with another UID) makes it gone; an error (no access to
// the bridge's namespace, an API server away) leaves it alive, and its
// containers alone.
func (a *kubeAPI) podAlive(ctx context.Context, p engine.PodRef) bool {
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
