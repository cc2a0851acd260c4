package engine

// Labels on every container the bridge creates.
const (
	// LabelBridge marks a container as the bridge's; its value is "1".
	LabelBridge = "io.github.mcp-server-code-execution-mode"
	// LabelHost is the host name of the bridge process that owns it.
	LabelHost = LabelBridge + ".host"
	// LabelPID is the owning bridge process's PID.
	LabelPID = LabelBridge + ".pid"
	// LabelPIDStart is the owning process's start time in clock ticks since
	// boot, so that a reused PID is not mistaken for the owner.
	LabelPIDStart = LabelBridge + ".pid-start"
	// LabelSession is the client session the container serves.
	LabelSession = LabelBridge + ".session"
	// LabelPIDNS is the inode number of the owning process's PID
	// namespace: a process of another namespace (a bridge in a container
	// that shares the host's name) cannot be looked up by its PID.
	LabelPIDNS = LabelBridge + ".pid-ns"
	// LabelResumable marks a container other bridges may resume; its
	// value is the fingerprint of their shared handle key.
	LabelResumable = LabelBridge + ".resumable"
)

// Labels of the containers of a bridge that runs in a pod. There, every
// replica is PID 1 on a node whose name they share: the host and process
// cannot tell replicas apart, so the pod owns its containers.
const (
	// LabelPodNamespace is the namespace of the bridge's pod.
	LabelPodNamespace = LabelBridge + ".pod-namespace"
	// LabelPodName is the bridge pod's name.
	LabelPodName = LabelBridge + ".pod-name"
	// LabelPodUID is the bridge pod's UID: a pod of the same name made
	// again (a StatefulSet's) is another owner.
	LabelPodUID = LabelBridge + ".pod-uid"
)

// A PodRef names a pod of the cluster: the one a bridge runs in, from the
// downward API (metadata.namespace, metadata.name, metadata.uid).
type PodRef struct {
	Namespace, Name, UID string
}

// String returns "namespace/name (uid)".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name + " (" + p.UID + ")" }

// A SandboxInfo describes a container created by a bridge process.
type SandboxInfo struct {
	ID     string
	Labels map[string]string
	// State is the engine's word for it: "running", "exited", ….
	State string
}
