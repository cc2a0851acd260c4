package engine

import (
	"log/slog"
	"time"
)

// Backend names, as MCP_BRIDGE_RUNTIME spells them.
const (
	BackendDocker     = "docker"
	BackendPodman     = "podman"
	BackendKubernetes = "kubernetes"
)

// AutoOptions configure an engine over one backend (auto.New), picked
// and connected on first use. They are plain values, so that what reads
// the configuration needs no backend: the command turns them into an
// engine. The zero value auto-detects.
type AutoOptions struct {
	// Backend is BackendDocker, BackendPodman, BackendKubernetes, or ""
	// to try a Podman service that answers, then Docker, then a Podman
	// service started for the bridge.
	Backend string
	// Address is the engine's address (docker.Options.Host,
	// podman.Options.URI). Zero: each backend's default.
	Address string
	// CertPath is docker.Options.CertPath. Zero: no TLS files.
	CertPath string
	// Context is the Docker context (docker.Options.Context) or Podman
	// connection (podman.Options.Connection) to reach the engine through;
	// it may not be set with Address. Zero: each backend's default.
	Context string
	// Logger receives connection, pull and clean-up reports. Zero:
	// discarded.
	Logger *slog.Logger
	// StopGrace is the grace period between SIGTERM and SIGKILL. Zero:
	// two seconds.
	StopGrace time.Duration
	// AllowWeakLimits lets sandboxes start on an engine that cannot
	// apply their memory, pids and CPU limits (engine.ErrWeakLimits),
	// such as rootless Podman on cgroup v1. Zero: such an engine starts
	// none.
	AllowWeakLimits bool
	// Kubernetes configures the Kubernetes backend (BackendKubernetes):
	// its namespace and RuntimeClass; its kubeconfig context is Context.
	// Zero: KubernetesOptions' defaults.
	Kubernetes KubernetesOptions
}

// DefaultK8sNamespace is the namespace of sandbox pods when none is set
// (MCP_BRIDGE_K8S_NAMESPACE); scripts/provision --kubernetes creates it.
const DefaultK8sNamespace = "mcp-sandboxes"

// KubernetesOptions configure the Kubernetes backend (kube.New).
type KubernetesOptions struct {
	// Kubeconfig is the kubeconfig file to read. Zero: KUBECONFIG (a
	// list of files, merged), else ~/.kube/config, else the in-cluster
	// configuration of a pod's service account.
	Kubeconfig string
	// Context is the kubeconfig context to use. Zero: the current one.
	Context string
	// Namespace is the namespace of the sandbox pods. Zero:
	// DefaultK8sNamespace.
	Namespace string
	// RuntimeClass names the RuntimeClass of the pods, such as "gvisor".
	// Zero: the node's default runtime.
	RuntimeClass string
	// Owner is the pod the bridge runs in, when it runs in the cluster
	// (MCP_BRIDGE_POD_NAMESPACE, _NAME and _UID, from the downward API):
	// its sandboxes are labelled with that pod, and are orphans only when
	// it is gone from the API. Zero: the bridge is a process of its host,
	// and owns its sandboxes by host name and process id.
	Owner PodRef
	// SandboxTemplate names an agent-sandbox SandboxTemplate of the
	// namespace (MCP_BRIDGE_K8S_SANDBOX_TEMPLATE): each sandbox is then a
	// SandboxClaim of it, checked against the bridge's own pod
	// (engine/kube, claim.go). Zero: the bridge creates its pods itself.
	SandboxTemplate string
	// Logger receives connection and clean-up reports. Zero: discarded.
	Logger *slog.Logger
}
