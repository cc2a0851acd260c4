package mcpbridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
)

// errInstallOutsideCall reports a runtime.install asked while no
// run_python call of the session runs (code a call left running).
var errInstallOutsideCall = errors.New("runtime.install runs within a run_python call: no call of this session is running")

// install answers runtime.install for the client session cs: the plan of
// an install of reqs (installPlan), opening the endpoint for the call in
// progress; or, with op "ended", the runtime's report that a pip it
// started ended.
func (b *Bridge) install(ctx context.Context, cs *clientSession, op string, reqs []string, haveWheel, imagePip bool) (any, error) {
	ci := cs.current.Load()
	if op == "ended" {
		if cs.install != nil && ci != nil {
			cs.install.ended(ci)
		}
		return map[string]any{}, nil
	}
	plan, err := b.installPlan(ctx, reqs, haveWheel, imagePip)
	if err != nil {
		return nil, err
	}
	switch {
	case cs.install == nil:
		return nil, errNoGateway
	case ci == nil:
		return nil, errInstallOutsideCall
	}
	cs.install.open(ci)
	return plan, nil
}

// errNoGateway reports an install asked of a bridge whose egress gateway,
// through which packages are fetched, is not running.
var errNoGateway = errors.New("packages are installed through the egress gateway, which is not running")

// installPlan answers runtime.install: each requirement checked (a name,
// extras, specifiers and a marker; no URL, path or pip option), pip's
// arguments for an install into the sandbox's own engine.SiteDir, and
// which pip runs them: the wheel the sandbox unpacked before (haveWheel),
// else the operator's wheel, else the image's own pip (imagePip: the
// sandbox says its image has one; "pip": "image"), else the pinned wheel,
// fetched through the gateway the first time.
func (b *Bridge) installPlan(ctx context.Context, reqs []string, haveWheel, imagePip bool) (map[string]any, error) {
	if b.egress == nil {
		return nil, errNoGateway
	}
	switch {
	case len(reqs) == 0:
		return nil, errors.New("runtime.install takes at least one requirement, such as \"requests\" or \"numpy>=1.26\"")
	case len(reqs) > packages.MaxRequirements:
		return nil, fmt.Errorf("runtime.install takes at most %d requirements at once; it was given %d", packages.MaxRequirements, len(reqs))
	}
	parsed := make([]packages.Requirement, 0, len(reqs))
	var names []string
	for _, s := range reqs {
		r, err := packages.Parse(s)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, r)
		names = append(names, r.String())
	}
	plan := map[string]any{
		"args":         b.opts.Packages.InstallArgs(engine.SiteDir, parsed),
		"target":       engine.SiteDir,
		"requirements": names,
	}
	switch {
	case haveWheel:
	case imagePip && !b.wheels.Operator():
		plan["pip"] = "image"
	default:
		name, data, err := b.wheels.Wheel(ctx)
		if err != nil {
			return nil, err
		}
		plan["wheel_name"], plan["wheel"] = name, data
	}
	return plan, nil
}
