//go:build !remote

package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestPodmanNotCompiled(t *testing.T) {
	_, err := NewPodman(context.Background(), nil)
	if !errors.Is(err, ErrBackendNotCompiled) || !strings.Contains(err.Error(), PodmanBuildTags) {
		t.Fatalf("NewPodman: %v, want ErrBackendNotCompiled naming the build tags", err)
	}
	var p *Podman
	if _, err := p.Start(context.Background(), Spec{}); !errors.Is(err, ErrBackendNotCompiled) {
		t.Fatalf("Start: %v", err)
	}
	if _, err := p.List(context.Background()); !errors.Is(err, ErrBackendNotCompiled) {
		t.Fatalf("List: %v", err)
	}
	if _, err := p.SandboxMemory(context.Background(), "", "0123456789ab"); !errors.Is(err, ErrBackendNotCompiled) {
		t.Fatalf("SandboxMemory: %v", err)
	}
	if p.Name() != "podman" || p.Close() != nil {
		t.Fatal("Name or Close of the placeholder")
	}
}
