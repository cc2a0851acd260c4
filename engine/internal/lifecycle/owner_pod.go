package lifecycle

import (
	"context"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// labelPod adds the labels of pod p to l; a zero PodRef adds none.
func labelPod(p engine.PodRef, l map[string]string) {
	if p == (engine.PodRef{}) {
		return
	}
	l[engine.LabelPodNamespace], l[engine.LabelPodName], l[engine.LabelPodUID] = p.Namespace, p.Name, p.UID
}

// podOf returns the pod that labels name as the owner, if they name one.
func podOf(labels map[string]string) (engine.PodRef, bool) {
	p := engine.PodRef{Namespace: labels[engine.LabelPodNamespace], Name: labels[engine.LabelPodName], UID: labels[engine.LabelPodUID]}
	return p, p.UID != ""
}

// podsGone returns the test of whether an owner pod is gone for one
// clean-up pass: each pod is looked up once, through alive.
func podsGone(ctx context.Context, alive func(context.Context, engine.PodRef) bool) func(engine.PodRef) bool {
	if alive == nil {
		return nil
	}
	seen := map[engine.PodRef]bool{}
	return func(p engine.PodRef) bool {
		gone, ok := seen[p]
		if !ok {
			gone = !alive(ctx, p)
			seen[p] = gone
		}
		return gone
	}
}
