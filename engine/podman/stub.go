//go:build !remote

package podman

import (
	"context"
	"fmt"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Compiled reports whether this binary has the Podman backend: it has
// not (built without PodmanBuildTags).
const Compiled = false

// A Podman is a placeholder: this binary was built without the Podman
// backend (see PodmanBuildTags).
type Podman struct{}

// New reports that the Podman backend is not compiled in.
func New(context.Context, *Options) (*Podman, error) {
	return nil, fmt.Errorf("podman: %w (rebuild with -tags %q)", engine.ErrBackendNotCompiled, engine.PodmanBuildTags)
}

// Name returns "podman".
func (*Podman) Name() string { return engine.BackendPodman }

// Close does nothing.
func (*Podman) Close() error { return nil }

// Start reports that the Podman backend is not compiled in.
func (*Podman) Start(context.Context, engine.Spec) (engine.Sandbox, error) {
	return nil, fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// List reports that the Podman backend is not compiled in.
func (*Podman) List(context.Context) ([]engine.SandboxInfo, error) {
	return nil, fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// Ping reports that the Podman backend is not compiled in.
func (*Podman) Ping(context.Context) error {
	return fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// Resume reports that the Podman backend is not compiled in.
func (*Podman) Resume(context.Context, string, string, []string) (engine.Sandbox, error) {
	return nil, fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// RemoveSandbox reports that the Podman backend is not compiled in.
func (*Podman) RemoveSandbox(context.Context, string, string) error {
	return fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// SweepExited reports that the Podman backend is not compiled in.
func (*Podman) SweepExited(context.Context, string) (int, error) {
	return 0, fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// SandboxFiles reports that the Podman backend is not compiled in.
func (*Podman) SandboxFiles(context.Context, string, string) (engine.Files, error) {
	return nil, fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}

// SandboxMemory reports that the Podman backend is not compiled in.
func (*Podman) SandboxMemory(context.Context, string, string) (int64, error) {
	return 0, fmt.Errorf("podman: %w", engine.ErrBackendNotCompiled)
}
