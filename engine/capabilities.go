package engine

import "context"

// A Pinger is an Engine that can tell cheaply whether its container engine
// answers, as a health check asks.
type Pinger interface {
	// Ping reports whether the engine answers within ctx.
	Ping(ctx context.Context) error
}

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
	// WeakLimits says why the engine cannot apply a sandbox's memory,
	// pids and CPU limits; "" when it can.
	WeakLimits string
}

// A Describer is an Engine that can describe its container engine and
// tell which images it holds, as a diagnosis of a setup asks. The three
// backends are Describers.
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

// An ImageEnsurer is an Engine that can make sure an image is present
// before a start needs it, as the start would (pulling it when missing),
// joining a pull already under way; a start waiting on that pull hears
// its progress through engine.WithPullWatcher. Docker and Podman are.
type ImageEnsurer interface {
	EnsureImage(ctx context.Context, ref string) error
}

// An OCIRuntimeReporter is a Sandbox that can tell which OCI runtime its
// container was created with, as the engine reports it. The sandboxes of
// Docker and Podman are OCIRuntimeReporters until they are closed.
type OCIRuntimeReporter interface {
	// OCIRuntime returns the name of the container's OCI runtime, such
	// as "runc" or "runsc", or "" when the engine does not say.
	OCIRuntime(ctx context.Context) (string, error)
}

// A MemoryReader is an Engine that reads how much memory a running
// sandbox uses. Docker and Podman are; Kubernetes is not: it would need
// a metrics server, which the bridge does not assume. A caller with the
// name of the sandbox's engine calls SandboxMemory, which routes it.
type MemoryReader interface {
	// SandboxMemory returns the bytes of memory the running sandbox
	// container ref (an ID or its prefix as Session.Sandbox returns it)
	// on the engine named engineName uses, as `docker stats` counts it:
	// the cgroup's usage less its inactive file cache. engineName is ""
	// for a bridge with one engine, else a name of MCP_BRIDGE_ENGINES
	// (as for Resumer.Resume and FileReacher.SandboxFiles). Errors wrap
	// ErrNoSandbox, ErrSandboxExited or ErrOtherEngine as SandboxFiles'
	// do.
	//
	// Docker's figure is computed here from the Engine API's stats.
	// Podman's is the service's own MemUsage, which counts as docker
	// stats does from Podman 5.6; an earlier service counts the page
	// cache too on cgroup v1 (memory.usage_in_bytes whole) and only
	// anonymous memory on cgroup v2 (memory.stat's anon). A Docker
	// daemon samples the containers whose stats are asked for once a
	// second: a read within a second of another waits for the next
	// round (up to a second); reads of several sandboxes made at once
	// share one.
	SandboxMemory(ctx context.Context, engineName, ref string) (int64, error)
}

// A FileReacher is an Engine that reaches the files of a running sandbox
// it did not start in this process, without running anything in it and
// without attaching to its runtime: another replica may be driving it. A
// bridge reads and writes the records it keeps in a sandbox for every
// replica (a task's) this way.
type FileReacher interface {
	// SandboxFiles returns the files of the running sandbox container
	// ref on the engine named engineName (as for Resumer.Resume); an
	// error wrapping ErrNoSandbox, ErrSandboxExited or ErrOtherEngine
	// when it cannot be reached.
	SandboxFiles(ctx context.Context, engineName, ref string) (Files, error)
}

// A KubeEgressVerdict is whether sandbox pods have a way out of their
// network, as kube.EgressOf decides it.
type KubeEgressVerdict int

// The verdicts of kube.EgressOf.
const (
	// KubeNoRouteOut: the pod has no default route and no route
	// through a gateway; only its own subnet is reachable.
	KubeNoRouteOut KubeEgressVerdict = iota
	// KubeEgressDenied: the pod has a route out, and a NetworkPolicy
	// selecting it denies it all egress; whether the cluster's network
	// plugin enforces policies is not known from the API.
	KubeEgressDenied
	// KubeEgressOpen: the pod has a route out, and no NetworkPolicy
	// denies it all egress.
	KubeEgressOpen
)

// A KubeEgress is what kube.EgressOf found of a sandbox pod's way out.
type KubeEgress struct {
	Verdict KubeEgressVerdict
	// Routes are the pod's routes out, as "eth0 default via 10.0.0.1"
	// or "eth0 203.0.113.0/24 via 10.0.0.1"; none for KubeNoRouteOut.
	Routes []string
	// Denying names the policies that select the pod, are of type
	// Egress and have no egress rules: each denies it all egress.
	Denying []string
	// Allowing names the policies that select the pod and allow it some
	// egress: policies add up, so with one of them the pod's egress is
	// not denied, whatever Denying holds.
	Allowing []string
}

// An EgressChecker is an Engine whose sandboxes are pods, which can tell
// whether they have a way out of their network (doctor asks). Kubernetes
// is one (reached through As).
type EgressChecker interface {
	// CheckEgress starts a sandbox from spec, reads its routes from
	// inside, holds them against the NetworkPolicies that select it and
	// removes it; it sends no traffic.
	CheckEgress(ctx context.Context, spec Spec) (KubeEgress, error)
}

// An EngineState is what an engine over several (auto.Multi) knows of
// one of them.
type EngineState struct {
	// Name is the engine's Endpoint.Name.
	Name string `json:"name"`
	// Up is false while the engine is backing off after failing to
	// answer.
	Up bool `json:"up"`
	// Sandboxes counts the sandboxes open on it, with starts under way.
	Sandboxes int `json:"sandboxes"`
	// Error is its last failure to answer, while it is not up.
	Error string `json:"error,omitempty"`
}

// An EngineStater is an engine over several that reports the state of
// each, as a bridge's health and metrics show them.
type EngineStater interface {
	// Engines reports the state of each engine, in the order listed.
	Engines() []EngineState
}
