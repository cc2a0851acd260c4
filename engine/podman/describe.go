//go:build remote

package podman

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/system"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Describe implements Describer: it asks the service's system info (which
// costs the service a few hundred milliseconds: it asks its OCI runtimes,
// conmon, … for their versions).
func (p *Podman) Describe(ctx context.Context) (engine.Info, error) {
	info := engine.Info{Backend: engine.BackendPodman, Address: p.ep.URI, Context: p.ep.Connection}
	sys, err := system.Info(p.ctx(ctx), nil)
	if err != nil {
		return info, fmt.Errorf("podman: asking the system info: %w", err)
	}
	if sys.Version.Version != "" {
		info.Version, info.APIVersion = sys.Version.Version, sys.Version.APIVersion
	}
	if sys.Host != nil && sys.Host.OCIRuntime != nil {
		info.DefaultOCIRuntime = sys.Host.OCIRuntime.Name
	}
	info.WeakLimits = weakLimits(sys.Host)
	return info, nil
}

// OCIRuntimeOf implements lifecycle.RuntimeInspector: the base name of the
// container's OCIRuntime, as checkOCIRuntime compares it.
func (p *Podman) OCIRuntimeOf(ctx context.Context, id string) (string, error) {
	info, err := containers.Inspect(p.ctx(ctx), id, nil)
	if err != nil {
		return "", err
	}
	if info.OCIRuntime == "" {
		return "", nil
	}
	return filepath.Base(info.OCIRuntime), nil
}

var _ engine.Describer = (*Podman)(nil)
