package engine

import (
	"maps"
	"strings"
)

// Defaults for the zero values of Spec and Settings.
const (
	DefaultImage          = "python:3.14-slim"
	DefaultUser           = "65534:65534"
	DefaultMemoryBytes    = 512 << 20
	DefaultPidsLimit      = 128
	DefaultTmpBytes       = 64 << 20
	DefaultWorkspaceBytes = 128 << 20
	DefaultNoFile         = 1024
	DefaultNProc          = 1024
	// WorkspaceDir is the sandbox's working directory and HOME.
	WorkspaceDir = "/workspace"
	// TmpfsOptions are the mount options of every writable mount.
	TmpfsOptions = "rw,noexec,nosuid,nodev"
)

// SandboxEnv is the complete environment of every sandbox: nothing of the
// host's environment is passed in.
var SandboxEnv = []string{
	"HOME=" + WorkspaceDir,
	"PYTHONUNBUFFERED=1",
	"PYTHONIOENCODING=utf-8",
	"PYTHONDONTWRITEBYTECODE=1",
}

// A Spec describes one sandbox container. Settings.Spec builds one from the
// operator's settings; every zero value means the documented default.
type Spec struct {
	// Image is the image reference. Zero: DefaultImage.
	Image string
	// Cmd is the main process, run under the engine's init. Required.
	Cmd []string
	// User is "uid:gid". Zero: DefaultUser.
	User string
	// MemoryBytes is the memory limit; swap is limited to the same value,
	// so the container gets no swap. Zero: DefaultMemoryBytes.
	MemoryBytes int64
	// PidsLimit caps the container's processes and threads. Zero:
	// DefaultPidsLimit.
	PidsLimit int64
	// NanoCPUs caps CPU time in billionths of a CPU. Zero: no cap.
	NanoCPUs int64
	// TmpBytes is the size of the /tmp tmpfs. Zero: DefaultTmpBytes.
	TmpBytes int64
	// WorkspaceBytes is the size of the /workspace tmpfs. Zero:
	// DefaultWorkspaceBytes.
	WorkspaceBytes int64
	// NoFile is RLIMIT_NOFILE (soft and hard). Zero: DefaultNoFile.
	NoFile uint64
	// NProc is RLIMIT_NPROC (soft and hard). Zero: DefaultNProc.
	NProc uint64
	// OCIRuntime names an OCI runtime the engine knows, such as "runsc".
	// Zero: the engine's default runtime.
	OCIRuntime string
	// Session names the client session the container belongs to; it is
	// recorded in a label. Zero: no session label value.
	Session string
	// Labels are extra labels; they cannot override the bridge's own.
	Labels map[string]string
}

// withDefaults returns s with every zero value replaced by its default.
func (s Spec) withDefaults() Spec {
	if s.Image == "" {
		s.Image = DefaultImage
	}
	if s.User == "" {
		s.User = DefaultUser
	}
	if s.MemoryBytes == 0 {
		s.MemoryBytes = DefaultMemoryBytes
	}
	if s.PidsLimit == 0 {
		s.PidsLimit = DefaultPidsLimit
	}
	if s.TmpBytes == 0 {
		s.TmpBytes = DefaultTmpBytes
	}
	if s.WorkspaceBytes == 0 {
		s.WorkspaceBytes = DefaultWorkspaceBytes
	}
	if s.NoFile == 0 {
		s.NoFile = DefaultNoFile
	}
	if s.NProc == 0 {
		s.NProc = DefaultNProc
	}
	return s
}

// labels returns the container's labels: the caller's extras, then the
// bridge's own, which win.
func (s Spec) labels(o Owner) map[string]string {
	l := make(map[string]string, len(s.Labels)+5)
	maps.Copy(l, s.Labels)
	maps.Copy(l, o.labels())
	l[LabelSession] = s.Session
	return l
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

// isGVisor reports whether the OCI runtime named name is gVisor's.
func isGVisor(name string) bool {
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
	if !isGVisor(s.OCIRuntime) {
		return s.PidsLimit, s.NProc
	}
	return gVisorPidsBase + gVisorPidsPerTask*s.PidsLimit, min(s.NProc, uint64(s.PidsLimit))
}
