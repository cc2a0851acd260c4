package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/system"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A dockerDescribeAPI is the part of the Docker client that Describe
// calls, beyond dockerAPI.
type dockerDescribeAPI interface {
	ServerVersion(ctx context.Context) (types.Version, error)
	Info(ctx context.Context) (system.Info, error)
}

// errNoDescription reports a client that cannot describe its engine.
var errNoDescription = errors.New("the engine's client cannot describe the engine")

// Describe implements Describer: it asks the daemon's version and info.
func (d *Docker) Describe(ctx context.Context) (engine.Info, error) {
	info := engine.Info{Backend: engine.BackendDocker, Address: d.e.Addr, Context: d.context}
	api, ok := d.api.(dockerDescribeAPI)
	if !ok {
		return info, fmt.Errorf("docker: %w", errNoDescription)
	}
	v, err := api.ServerVersion(ctx)
	if err != nil {
		return info, fmt.Errorf("docker: asking the version: %w", err)
	}
	info.Version, info.APIVersion = v.Version, v.APIVersion
	sys, err := api.Info(ctx)
	if err != nil {
		return info, fmt.Errorf("docker: asking the system info: %w", err)
	}
	info.DefaultOCIRuntime = sys.DefaultRuntime
	info.WeakLimits = dockerWeakLimits(sys)
	return info, nil
}

// OCIRuntimeOf implements lifecycle.RuntimeInspector: the container's
// HostConfig.Runtime, which the daemon sets to its default when the
// Spec names none.
func (d *Docker) OCIRuntimeOf(ctx context.Context, id string) (string, error) {
	c, err := d.api.ContainerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	if c.ContainerJSONBase == nil || c.HostConfig == nil {
		return "", nil
	}
	return c.HostConfig.Runtime, nil
}

var _ engine.Describer = (*Docker)(nil)

// Ping implements Pinger: it pings the Docker daemon.
func (d *Docker) Ping(ctx context.Context) error {
	if _, err := d.api.Ping(ctx); err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// WeakLimits implements lifecycle.LimitsProber from the daemon's info,
// which says whether it can apply memory, pids and CPU (CFS quota)
// limits: a rootless daemon on cgroup v1 cannot.
func (d *Docker) WeakLimits(ctx context.Context) (string, error) {
	api, ok := d.api.(dockerDescribeAPI)
	if !ok {
		return "", nil
	}
	sys, err := api.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("docker: asking the system info: %w", err)
	}
	return dockerWeakLimits(sys), nil
}

// dockerWeakLimits says which limits a daemon of info cannot apply.
func dockerWeakLimits(sys system.Info) string {
	var missing []string
	for _, l := range []struct {
		ok   bool
		name string
	}{{sys.MemoryLimit, "memory"}, {sys.PidsLimit, "pids"}, {sys.CPUCfsQuota, "CPU"}} {
		if !l.ok {
			missing = append(missing, l.name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the Docker daemon cannot apply %s limits (cgroup v%s)", strings.Join(missing, ", "), cmp.Or(sys.CgroupVersion, "?"))
}
