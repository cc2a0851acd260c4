//go:build !remote

package podman

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

func TestPodmanNotCompiled(t *testing.T) {
	_, err := New(context.Background(), nil)
	if !errors.Is(err, engine.ErrBackendNotCompiled) || !strings.Contains(err.Error(), engine.PodmanBuildTags) {
		t.Fatalf("New: %v, want ErrBackendNotCompiled naming the build tags", err)
	}
	var p *Podman
	if _, err := p.Start(context.Background(), engine.Spec{}); !errors.Is(err, engine.ErrBackendNotCompiled) {
		t.Fatalf("Start: %v", err)
	}
	if _, err := p.List(context.Background()); !errors.Is(err, engine.ErrBackendNotCompiled) {
		t.Fatalf("List: %v", err)
	}
	if _, err := p.SandboxMemory(context.Background(), "", "0123456789ab"); !errors.Is(err, engine.ErrBackendNotCompiled) {
		t.Fatalf("SandboxMemory: %v", err)
	}
	if p.Name() != "podman" || p.Close() != nil {
		t.Fatal("Name or Close of the placeholder")
	}
}
