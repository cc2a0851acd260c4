package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/system"
)

// An Info is what a Describer reports of its container engine.
type Info struct {
	// Backend is BackendDocker, BackendPodman or BackendKubernetes.
	Backend string
	// Version is the engine's version, such as "20.10.24".
	Version string
	// APIVersion is the version of the API the engine serves, such as
	// "1.41".
	APIVersion string
	// Address is where the engine was reached: a unix://, tcp:// or
	// ssh:// address.
	Address string
	// Context is the name of the Docker context (Docker) or of the
	// Podman connection (Podman: `podman system connection ls`)
	// Address comes from; "" when none named it.
	Context string
	// DefaultOCIRuntime is the OCI runtime the engine runs a container
	// with when its Spec names none, such as "runc" or "crun".
	DefaultOCIRuntime string
}

// A Describer is an Engine that can describe its container engine and
// tell which images it holds, as a diagnosis of a setup asks. Docker,
// Podman, Kubernetes and Auto are Describers.
type Describer interface {
	// Describe reports the engine's backend, versions, address and
	// default OCI runtime.
	Describe(ctx context.Context) (Info, error)
	// HasImage reports whether the image ref is present, without
	// pulling it.
	HasImage(ctx context.Context, ref string) (bool, error)
	// PullImage pulls the image ref, as Start does when it is missing.
	PullImage(ctx context.Context, ref string) error
}

// An OCIRuntimeReporter is a Sandbox that can tell which OCI runtime its
// container was created with, as the engine reports it. The sandboxes of
// Docker and Podman are OCIRuntimeReporters until they are closed.
type OCIRuntimeReporter interface {
	// OCIRuntime returns the name of the container's OCI runtime, such
	// as "runc" or "runsc", or "" when the engine does not say.
	OCIRuntime(ctx context.Context) (string, error)
}

// WithDefaults returns s with every zero value replaced by its default:
// the image, user and limits a container of s gets.
func (s Spec) WithDefaults() Spec { return s.withDefaults() }

// TaskLimits returns the pids cgroup limit and the RLIMIT_NPROC that a
// container of s (with its defaults applied) is given: PidsLimit and
// NProc, except under gVisor, where the cgroup also holds gVisor's own
// tasks (see taskLimits).
func (s Spec) TaskLimits() (pids int64, nproc uint64) { return s.withDefaults().taskLimits() }

// A runtimeInspector is a containerAPI that can tell the OCI runtime of
// one of its containers.
type runtimeInspector interface {
	ociRuntime(ctx context.Context, id string) (string, error)
}

// OCIRuntime implements OCIRuntimeReporter.
func (s *containerSandbox) OCIRuntime(ctx context.Context) (string, error) {
	if s.closed.Load() {
		return "", fmt.Errorf("inspecting container %s: %w", shortID(s.id), ErrClosed)
	}
	ri, ok := s.e.api.(runtimeInspector)
	if !ok {
		return "", fmt.Errorf("inspecting container %s: %s does not report OCI runtimes", shortID(s.id), s.e.name)
	}
	rt, err := ri.ociRuntime(ctx, s.id)
	if err != nil {
		return "", fmt.Errorf("inspecting container %s: %w", shortID(s.id), err)
	}
	return rt, nil
}

// A dockerDescribeAPI is the part of the Docker client that Describe
// calls, beyond dockerAPI.
type dockerDescribeAPI interface {
	ServerVersion(ctx context.Context) (types.Version, error)
	Info(ctx context.Context) (system.Info, error)
}

// errNoDescription reports a client that cannot describe its engine.
var errNoDescription = errors.New("the engine's client cannot describe the engine")

// Describe implements Describer: it asks the daemon's version and info.
func (d *Docker) Describe(ctx context.Context) (Info, error) {
	info := Info{Backend: BackendDocker, Address: d.e.addr, Context: d.context}
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
	return info, nil
}

// HasImage implements Describer.
func (d *Docker) HasImage(ctx context.Context, ref string) (bool, error) {
	return d.imageExists(ctx, ref)
}

// PullImage implements Describer.
func (d *Docker) PullImage(ctx context.Context, ref string) error {
	return d.pullImage(ctx, ref)
}

// ociRuntime implements runtimeInspector: the container's
// HostConfig.Runtime, which the daemon sets to its default when the
// Spec names none.
func (d *Docker) ociRuntime(ctx context.Context, id string) (string, error) {
	c, err := d.api.ContainerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	if c.ContainerJSONBase == nil || c.HostConfig == nil {
		return "", nil
	}
	return c.HostConfig.Runtime, nil
}

// Describe implements Describer: it connects the backend when none is
// connected yet (as the first Start would), then describes it.
func (a *Auto) Describe(ctx context.Context) (Info, error) {
	d, err := a.describer(ctx)
	if err != nil {
		return Info{}, err
	}
	return d.Describe(ctx)
}

// HasImage implements Describer.
func (a *Auto) HasImage(ctx context.Context, ref string) (bool, error) {
	d, err := a.describer(ctx)
	if err != nil {
		return false, err
	}
	return d.HasImage(ctx, ref)
}

// PullImage implements Describer.
func (a *Auto) PullImage(ctx context.Context, ref string) error {
	d, err := a.describer(ctx)
	if err != nil {
		return err
	}
	return d.PullImage(ctx, ref)
}

// describer returns the connected backend as a Describer.
func (a *Auto) describer(ctx context.Context) (Describer, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := b.(Describer)
	if !ok {
		return nil, fmt.Errorf("%s: %w", b.Name(), errNoDescription)
	}
	return d, nil
}

var (
	_ Describer          = (*Auto)(nil)
	_ Describer          = (*Docker)(nil)
	_ OCIRuntimeReporter = (*containerSandbox)(nil)
)
