package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// checkPackages reports the package settings: without a set, whether
// runtime.install can run (pip's wheel, the index); with one, the set
// made ready on the engine as a session would (installed when the engine
// lacks it, through a gateway of the policy in force), or why it cannot
// be: pip's error naming the requirement.
func (d *doctor) checkPackages(ctx context.Context, cfg *config.Config) {
	began := time.Now()
	o := cfg.Bridge.Packages
	r := checkResult{Check: "packages", Status: statusOK}
	defer func() { r.DurationMS = sinceMS(began); d.report(r) }()
	wheels := packages.NewWheels(&packages.WheelsOptions{Packages: &o, Logger: d.log})
	pip, err := pipSource(ctx, wheels)
	if err != nil {
		r.Status, r.Detail = statusFail, err.Error()
		r.Hint = "set MCP_BRIDGE_PIP_WHEEL to a pip wheel file, or unset it: installs then use the image's pip, else fetch " + wheels.Pin().Name
		return
	}
	if len(o.Requirements) == 0 {
		r.Detail = fmt.Sprintf("no package set (MCP_BRIDGE_PACKAGES unset); runtime.install installs from %s with %s", o.Index(), pip)
		return
	}
	eng, closeEng := d.newEngine(cfg, d.log)
	defer closeEng()
	file := policy.Open(cfg.Bridge.PolicyFile, discovery.NewRegistry(cfg.Bridge.Discovery).StateDir(), d.log)
	gw, err := egress.New(&egress.Options{Policy: file.Current, Logger: d.log})
	if err != nil {
		r.Status, r.Detail = statusFail, "the egress gateway, through which sets are installed, cannot start: "+err.Error()
		return
	}
	store := packages.NewStore(&packages.StoreOptions{Packages: &o, Engine: eng, Spec: cfg.Session.Spec, Logger: d.log,
		Network: func(session string, index, files []string) (packages.Installer, []byte) {
			return gw.NewInstallClient(session, policy.InstallHosts{Index: index, Files: files}), gw.CA()
		}})
	image := cfg.Session.Spec.WithDefaults().Image
	ready, err := store.Ensure(ctx, image)
	if err != nil {
		r.Status, r.Detail = statusFail, err.Error()
		r.Hint = "sessions fail their first call with this error until the set installs: fix the requirement, the index (MCP_BRIDGE_PIP_INDEX_URL) or the policy's inject rule for a private index"
		return
	}
	r.Image = image
	r.Detail = fmt.Sprintf("%d requirements ready for %s in volume %s (%s, Python %s), from %s; runtime.install uses %s",
		len(o.Requirements), image, ready.Mount.Name, engine.FormatBytes(ready.Bytes), ready.Python, o.Index(), pip)
}

// pipSource says which pip installs run: the operator's wheel (read now),
// else the image's own pip, else the pinned wheel, kept or to be fetched.
func pipSource(ctx context.Context, w *packages.Wheels) (string, error) {
	if w.Operator() {
		name, _, err := w.Wheel(ctx)
		if err != nil {
			return "", err
		}
		return name + " (MCP_BRIDGE_PIP_WHEEL)", nil
	}
	pin := w.Pin()
	if kept := w.Kept(); kept != "" {
		if _, _, err := w.Wheel(ctx); err == nil {
			return fmt.Sprintf("the image's pip, else %s (kept at %s, sha256 checked)", pin.Name, kept), nil
		}
	}
	return fmt.Sprintf("the image's pip, else %s (sha256 pinned), fetched from the index the first time it is needed", pin.Name), nil
}
