package engine

import (
	"cmp"
	"io"
	"strings"
	"time"
)

// Defaults for the zero values of Spec.
const (
	defaultImage          = "python:3.14-slim"
	defaultUser           = "65534:65534"
	defaultMemoryBytes    = 512 << 20
	defaultPidsLimit      = 128
	defaultTmpBytes       = 64 << 20
	defaultWorkspaceBytes = 128 << 20
	defaultOutBytes       = 64 << 20
	defaultNoFile         = 1024
	defaultNProc          = 1024
)

// The directories through which files pass between the host and a
// sandbox, through the engine's archive API (see Files). Both are mounts
// of their own, nested in the workspace.
const (
	// OutDir is where sandbox code leaves files for the host: writable by
	// the sandbox user, mounted noexec.
	OutDir = "/workspace/out"
	// InDir is where the host puts files for sandbox code: owned by root,
	// read-only to the sandbox user. It is mounted only when Spec.InBytes
	// is set.
	InDir = "/workspace/in"
	// LaneDir is where a sandbox sees the directory of Spec.Lane: the
	// fast lane's socket, sock, until the runtime connects to it.
	LaneDir = "/run/mcp-lane"
)

// A Spec describes one sandbox container; every zero value means the
// documented default.
type Spec struct {
	// Image is the image reference. Zero: "python:3.14-slim".
	Image string
	// Cmd is the main process, run under the engine's init. Required.
	Cmd []string
	// User is "uid:gid". Zero: "65534:65534" (nobody).
	User string
	// MemoryBytes is the memory limit; swap is limited to the same value,
	// so the container gets no swap. Zero: 512 MiB.
	MemoryBytes int64
	// PidsLimit caps the container's processes and threads. Zero: 128.
	PidsLimit int64
	// NanoCPUs caps CPU time in billionths of a CPU. Zero: no cap.
	NanoCPUs int64
	// TmpBytes is the size of the /tmp tmpfs. Zero: 64 MiB.
	TmpBytes int64
	// WorkspaceBytes is the size of the /workspace tmpfs. Zero: 128 MiB.
	WorkspaceBytes int64
	// OutBytes is the size of the OutDir mount. Zero: 64 MiB.
	OutBytes int64
	// InBytes is the size of the InDir mount. Zero: no InDir mount.
	InBytes int64
	// Input, with InBytes, writes the tar stream of what InDir holds for
	// the sandbox's code. An engine that fills InDir as the sandbox
	// starts (Kubernetes: a hardened init container extracts it, and the
	// sandbox's container mounts InDir read-only) calls it once, before
	// the sandbox's process starts, and its Sandbox reports InputFilled;
	// the others ignore it, and the caller copies the files in after the
	// start (Files.CopyIn). Its error fails the start. Zero: InDir is not
	// filled at start.
	Input func(w io.Writer) error
	// SiteBytes is the size of the SiteDir tmpfs, where the session's own
	// installs go (exec allowed, nosuid, nodev). Zero: no SiteDir mount.
	SiteBytes int64
	// Volumes are named volumes to mount, such as a package set at
	// PackagesDir. Zero: none.
	Volumes []VolumeMount
	// NoFile is RLIMIT_NOFILE (soft and hard). Zero: 1024.
	NoFile uint64
	// NProc is RLIMIT_NPROC (soft and hard). Zero: 1024.
	NProc uint64
	// OCIRuntime names an OCI runtime the engine knows, such as "runsc".
	// Zero: the engine's default OCI runtime.
	OCIRuntime string
	// Session names the client session the container belongs to; it is
	// recorded in a label. Zero: no session label value.
	Session string
	// Lane is a directory on the bridge's host that holds one Unix
	// socket, the sandbox's fast lane to the bridge (MCP_BRIDGE_FAST_LANE),
	// bind-mounted read-only at LaneDir. Docker and Podman mount it (a
	// source missing on the engine's host fails the start); Kubernetes,
	// whose nodes are not the bridge's host, ignores it, and the lane's
	// probe finds no socket. Zero: no such mount.
	Lane string
	// Resumable, when set, marks the container as one another bridge may
	// resume (LabelResumable, whose value it is: the fingerprint of the
	// replicas' shared handle key): the orphan clean-up spares it while
	// it runs, since it ends itself. Zero: no such label.
	Resumable string
	// SleepTTL, when set, marks the container as one that may sleep
	// (engine.Snapshotter) for that long (LabelSleepTTL, in seconds): the
	// clean-up spares it asleep until then. Zero: no such label.
	SleepTTL time.Duration
}

// withDefaults returns s with every zero value replaced by its default.
func (s Spec) withDefaults() Spec {
	s.Image = cmp.Or(s.Image, defaultImage)
	s.User = cmp.Or(s.User, defaultUser)
	s.MemoryBytes = cmp.Or(s.MemoryBytes, defaultMemoryBytes)
	s.PidsLimit = cmp.Or(s.PidsLimit, defaultPidsLimit)
	s.TmpBytes = cmp.Or(s.TmpBytes, defaultTmpBytes)
	s.WorkspaceBytes = cmp.Or(s.WorkspaceBytes, defaultWorkspaceBytes)
	s.OutBytes = cmp.Or(s.OutBytes, defaultOutBytes)
	s.NoFile = cmp.Or(s.NoFile, defaultNoFile)
	s.NProc = cmp.Or(s.NProc, defaultNProc)
	return s
}

// Allowance for gVisor's own host tasks in a sandbox's pids cgroup: its
// user-space kernel (the Sentry) runs in the container's cgroup, with
// about 38 host tasks of its own and about 5 more per sandbox process
// (measured with runsc 20221219, ptrace platform; a sandbox thread costs
// about 0.1).
const (
	gVisorPidsBase    = 128
	gVisorPidsPerTask = 8
)

// IsGVisor reports whether the OCI runtime (or RuntimeClass) named name
// is gVisor's.
func IsGVisor(name string) bool {
	name = strings.ToLower(name)
	return strings.Contains(name, "runsc") || strings.Contains(name, "gvisor")
}

// taskLimits returns the sandbox's pids cgroup limit and its RLIMIT_NPROC.
// Under runc they are PidsLimit and NProc: the host kernel counts the
// sandbox's processes and threads in the cgroup, and RLIMIT_NPROC per
// host user, across containers. Under gVisor the cgroup also holds the
// Sentry's host tasks, so a limit sized for the sandbox made the Sentry
// itself fail (the container exited with code 2 after a handful of
// forks); there the Sentry's RLIMIT_NPROC, which counts the sandbox's own
// processes and threads only, carries PidsLimit, and the cgroup keeps a
// backstop sized for the Sentry.
func (s Spec) taskLimits() (pids int64, nproc uint64) {
	if !IsGVisor(s.OCIRuntime) {
		return s.PidsLimit, s.NProc
	}
	return gVisorPidsBase + gVisorPidsPerTask*s.PidsLimit, min(s.NProc, uint64(s.PidsLimit))
}

// WithDefaults returns s with every zero value replaced by its default:
// the image, user and limits a container of s gets.
func (s Spec) WithDefaults() Spec { return s.withDefaults() }

// TaskLimits returns the pids cgroup limit and the RLIMIT_NPROC that a
// container of s (with its defaults applied) is given: PidsLimit and
// NProc, except under gVisor, where the cgroup also holds gVisor's own
// tasks (see taskLimits).
func (s Spec) TaskLimits() (pids int64, nproc uint64) { return s.withDefaults().taskLimits() }
