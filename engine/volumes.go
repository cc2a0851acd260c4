package engine

import (
	"context"
	"errors"
	"time"
)

// LabelPackages marks a named volume that holds a package set; its value
// is the set's key. Such volumes carry no owner labels: they outlive the
// bridge that made them, and orphan clean-up never lists them.
const LabelPackages = LabelBridge + ".packages"

// Where package sets and live installs appear in a sandbox.
const (
	// PackagesDir is where a package set's volume is mounted, read-only.
	PackagesDir = "/opt/mcp-packages"
	// SiteDir is where a session's own installs go: a tmpfs of
	// Spec.SiteBytes, writable by the sandbox user, exec allowed (their
	// extension modules are mapped executable).
	SiteDir = "/opt/mcp-site"
)

// ErrVolumeInUse reports a volume a container still mounts.
var ErrVolumeInUse = errors.New("the volume is in use")

// A VolumeMount mounts a named volume in a sandbox.
type VolumeMount struct {
	// Name is the volume's name.
	Name string
	// Target is the absolute path it appears at.
	Target string
	// ReadOnly mounts it read-only. A volume is never mounted noexec
	// (extension modules load from it); Podman mounts it nosuid and
	// nodev, Docker's volume mounts have no such options.
	ReadOnly bool
}

// A VolumeInfo describes a named volume.
type VolumeInfo struct {
	Name    string
	Labels  map[string]string
	Created time.Time
}

// Volumes is implemented by engines that keep named volumes: Docker and
// Podman. They live on the engine's host, so they work with a remote
// engine (nothing is bind-mounted from the bridge's host).
type Volumes interface {
	// CreateVolume creates the volume called name with labels; a volume
	// of that name that exists already is left as it is, labels and all.
	CreateVolume(ctx context.Context, name string, labels map[string]string) error
	// Volume describes the volume called name; an error wrapping
	// fs.ErrNotExist when there is none.
	Volume(ctx context.Context, name string) (VolumeInfo, error)
	// VolumesLabelled returns the volumes that carry label, whatever its
	// value.
	VolumesLabelled(ctx context.Context, label string) ([]VolumeInfo, error)
	// RemoveVolume removes the volume called name; one already gone is no
	// error, one a container mounts fails with ErrVolumeInUse.
	RemoveVolume(ctx context.Context, name string) error
}

// ImageIDs is implemented by engines that tell which image a reference
// names: Docker and Podman.
type ImageIDs interface {
	// ImageID returns the ID of the image ref names; an error wrapping
	// fs.ErrNotExist when the engine does not have it.
	ImageID(ctx context.Context, ref string) (string, error)
}
