// Package engine is what a bridge needs of a container engine: the
// Engine that starts a hardened sandbox from a Spec, the Sandbox it
// starts, the optional capabilities an engine may have (Resumer, Files,
// Volumes, …, reached through As), the errors, labels and exit statuses
// they report, and small shared helpers. It links no engine's client: a
// package that needs only these (the session, the bridge) does not link
// Docker's, Podman's or Kubernetes' clients.
//
// The backends are packages of their own: engine/docker (the Docker
// Engine API), engine/podman (Podman's Go bindings, compiled in with the
// build tags of PodmanBuildTags; without them its stub reports Podman
// unavailable) and engine/kube (sandboxes as pods of a Kubernetes
// cluster). engine/auto picks one lazily, on first use (Auto), or places
// sandboxes on several (Multi). The command assembles them.
//
// Every container an engine creates is hardened by one pure function per
// backend (the Docker configuration, the Podman spec generator, the pod):
// no network, read-only root filesystem, all capabilities dropped, no new
// privileges, an unprivileged user, memory/pids/cpu limits, small noexec
// tmpfs mounts, a fixed environment and an init process.
package engine

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"strings"
)

// An Engine starts sandboxes. Implementations are safe for concurrent use.
type Engine interface {
	// Start creates a container for spec, attaches its standard streams,
	// and starts it. The returned Sandbox must be closed.
	Start(ctx context.Context, spec Spec) (Sandbox, error)
}

// A Sandbox is one running container with its standard streams attached.
//
// Stdout and Stderr are demultiplexed and buffered in bounded buffers: a
// caller must drain both (concurrently) or the container's writes block
// once a buffer is full. Both readers return io.EOF after the container
// has exited and everything it wrote was read.
type Sandbox interface {
	// ID is the engine's container ID.
	ID() string
	// Stdin is the container's standard input. Closing it half-closes
	// the attached connection, so the container reads EOF.
	Stdin() io.WriteCloser
	// Stdout is the container's standard output.
	Stdout() io.Reader
	// Stderr is the container's standard error.
	Stderr() io.Reader
	// Wait blocks until the container has exited and reports how.
	Wait(ctx context.Context) (ExitStatus, error)
	// Close stops the container (SIGTERM, then SIGKILL after a grace
	// period) and removes it. Close runs to completion even when the
	// caller's contexts are cancelled; it is safe to call more than once.
	Close() error
}

// A Detacher is a Sandbox that can let its container run on without it:
// a persistent sandbox, which another bridge resumes.
type Detacher interface {
	// Detach releases the sandbox's streams and leaves its container
	// running; the Sandbox is closed after it.
	Detach() error
}

// Sentinel errors, for errors.Is.
var (
	// ErrNoEngine reports that no container engine could be reached.
	ErrNoEngine = errors.New("no container engine is reachable")
	// ErrWeakLimits reports an engine that cannot apply a sandbox's
	// memory, pids and CPU limits (rootless Podman or Docker on cgroup
	// v1, or on cgroup v2 without those controllers delegated), where no
	// sandbox starts unless the operator accepts it
	// (AutoOptions.AllowWeakLimits).
	ErrWeakLimits = errors.New("the engine cannot apply the sandbox's memory, pids and CPU limits")
	// ErrImage reports that the sandbox image is missing and could not be pulled.
	ErrImage = errors.New("sandbox image unavailable")
	// ErrBackendNotCompiled reports that a backend was left out of this build.
	ErrBackendNotCompiled = errors.New("backend not compiled into this binary")
	// ErrClosed reports use of a closed engine or Sandbox.
	ErrClosed = errors.New("closed")
	// ErrNotRegular reports that a sandbox path is not a regular file: a
	// symbolic link, a directory, a device, ….
	ErrNotRegular = errors.New("not a regular file")
	// ErrFileTooLarge reports that a sandbox file is larger than allowed.
	ErrFileTooLarge = errors.New("file too large")
	// ErrReattached is read once from a sandbox's standard output where
	// its streams were lost and attached again (the Kubernetes API server
	// restarted, say): the container runs on, but bytes written either way
	// while no stream was attached may be lost, so the reader must
	// resynchronise. Reading goes on after it.
	ErrReattached = errors.New("the sandbox's streams were lost and attached again")
)

// PodmanBuildTags are the build tags that compile the Podman backend in,
// as podman_tags.txt (which the Makefile and the scripts read) writes them.
var PodmanBuildTags = strings.TrimSpace(podmanTagsFile)

//go:embed podman_tags.txt
var podmanTagsFile string
