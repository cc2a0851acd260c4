//go:build remote

package podman

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/containers/podman/v5/libpod/define"
	"github.com/containers/podman/v5/pkg/bindings/system"
)

// WeakLimits implements lifecycle.LimitsProber from the service's system
// info.
func (p *Podman) WeakLimits(ctx context.Context) (string, error) {
	sys, err := system.Info(p.ctx(ctx), nil)
	if err != nil {
		return "", fmt.Errorf("podman: asking the system info: %w", err)
	}
	return weakLimits(sys.Host), nil
}

// weakLimits says why a service of host cannot apply memory, pids and
// CPU limits: a rootless one on cgroup v1 applies none ("Resource limits
// are not supported and ignored on cgroups V1 rootless systems"), on
// cgroup v2 only those of the controllers delegated to its user. A
// rootful service applies them all.
func weakLimits(h *define.HostInfo) string {
	if h == nil || !h.Security.Rootless {
		return ""
	}
	if h.CgroupsVersion == "v1" {
		return "rootless Podman on cgroup v1 ignores memory, pids and CPU limits"
	}
	var missing []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !slices.Contains(h.CgroupControllers, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("rootless Podman's user has no %s cgroup controller delegated (it has %q)", strings.Join(missing, ", "), h.CgroupControllers)
	}
	return ""
}
