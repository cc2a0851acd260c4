package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// routesHint is the hint of sandbox pods that have a way out.
const routesHint = "give the sandbox namespace a network without a route out (SECURITY.md, Kubernetes pods), or a network plugin " +
	"that enforces NetworkPolicy and a policy selecting the sandbox pods with policyTypes [Egress] and no egress rules " +
	"(the bridge creates mcp-sandbox-deny-all when its identity may create networkpolicies), and no policy allowing them egress"

// checkPods runs the checks of an engine whose sandboxes are pods, once
// it answered: the image cannot be looked up, the probe from inside is
// not adapted to pods yet, and whether a pod has a way out is checked.
func (d *doctor) checkPods(ctx context.Context, eng engine.Engine, spec engine.Spec) {
	ref := spec.WithDefaults().Image
	d.report(checkResult{Check: "image", Status: statusWarn, Image: ref,
		Detail: ref + ": the API server cannot tell which images a node holds; the kubelet reports a missing one as a pod starts (the routes check starts one)"})
	d.report(skipped("hardening", "not probed from inside a pod yet: the engine holds every pod to its hardening as the API server admitted it (SECURITY.md, Kubernetes pods)"))
	d.report(skipped("runtime", "a pod's RuntimeClass is not checked yet"))
	d.routesCheck(ctx, eng, spec)
}

// routesCheck starts a sandbox pod from spec and reports whether it has
// a way out: its routes, read from inside (no traffic is sent), and the
// NetworkPolicies that select it.
func (d *doctor) routesCheck(ctx context.Context, eng engine.Engine, spec engine.Spec) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	ec, err := engine.As[engine.EgressChecker](ctx, eng)
	if errors.Is(err, errors.ErrUnsupported) {
		d.report(checkResult{Check: "routes", Status: statusWarn, Detail: "this engine cannot be asked for its pods' routes; not checked"})
		return
	}
	var e engine.KubeEgress
	if err == nil {
		e, err = ec.CheckEgress(ctx, spec)
	}
	r := routesResult(e, err)
	if errors.Is(err, context.DeadlineExceeded) {
		r.Detail = fmt.Sprintf("no answer within %v: %s", probeTimeout, r.Detail)
	}
	r.DurationMS = sinceMS(began)
	d.report(r)
}

// routesResult reports what CheckEgress found of a sandbox pod's way
// out, or why it could not tell.
func routesResult(e engine.KubeEgress, err error) checkResult {
	r := checkResult{Check: "routes", Routes: e.Routes, Policies: e.Denying}
	routes := strings.Join(e.Routes, ", ")
	switch {
	case err != nil:
		r.Status, r.Detail = statusFail, fmt.Sprintf("checking the sandbox pods' routes: %v", err)
		r.Hint = "the bridge's identity needs pods (create, get, delete), pods/attach and pods/exec (create) and networkpolicies (list) " +
			"in the namespace (scripts/provision --kubernetes grants them)"
	case e.Verdict == engine.KubeNoRouteOut:
		r.Status, r.Detail = statusOK, "pods have no route out: a sandbox pod's route tables, read from inside, hold no default route and no route through a gateway"
	case e.Verdict == engine.KubeEgressDenied:
		r.Status = statusWarn
		r.Detail = fmt.Sprintf("a route out (%s); a NetworkPolicy denies egress (%s), but whether the cluster's network plugin enforces it is not verified",
			routes, strings.Join(e.Denying, ", "))
		r.Hint = "without a plugin that enforces NetworkPolicy the pods reach what the route reaches; " + routesHint
	default:
		r.Status = statusFail
		r.Detail = fmt.Sprintf("sandbox pods have a route out (%s), and no NetworkPolicy denies them egress", routes)
		if len(e.Allowing) > 0 {
			r.Detail += fmt.Sprintf(": policies selecting them allow egress (%s)", strings.Join(e.Allowing, ", "))
			r.Policies = append(r.Policies, e.Allowing...)
		}
		r.Hint = routesHint
	}
	return r
}
