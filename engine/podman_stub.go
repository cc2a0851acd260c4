//go:build !remote

package engine

import (
	"context"
	"fmt"
)

// A Podman is a placeholder: this binary was built without the Podman
// backend (see PodmanBuildTags).
type Podman struct{}

// NewPodman reports that the Podman backend is not compiled in.
func NewPodman(context.Context, *PodmanOptions) (*Podman, error) {
	return nil, fmt.Errorf("podman: %w (rebuild with -tags %q)", ErrBackendNotCompiled, PodmanBuildTags)
}

// Name returns "podman".
func (*Podman) Name() string { return BackendPodman }

// Close does nothing.
func (*Podman) Close() error { return nil }

// Start reports that the Podman backend is not compiled in.
func (*Podman) Start(context.Context, Spec) (Sandbox, error) {
	return nil, fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// List reports that the Podman backend is not compiled in.
func (*Podman) List(context.Context) ([]SandboxInfo, error) {
	return nil, fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// Ping reports that the Podman backend is not compiled in.
func (*Podman) Ping(context.Context) error {
	return fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// Resume reports that the Podman backend is not compiled in.
func (*Podman) Resume(context.Context, string, string, []string) (Sandbox, error) {
	return nil, fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// RemoveSandbox reports that the Podman backend is not compiled in.
func (*Podman) RemoveSandbox(context.Context, string, string) error {
	return fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// SweepExited reports that the Podman backend is not compiled in.
func (*Podman) SweepExited(context.Context, string) (int, error) {
	return 0, fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// SandboxFiles reports that the Podman backend is not compiled in.
func (*Podman) SandboxFiles(context.Context, string, string) (Files, error) {
	return nil, fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}

// SandboxMemory reports that the Podman backend is not compiled in.
func (*Podman) SandboxMemory(context.Context, string, string) (int64, error) {
	return 0, fmt.Errorf("podman: %w", ErrBackendNotCompiled)
}
