//go:build remote

package podman

import (
	"context"
	"errors"
	"fmt"

	"github.com/containers/podman/v5/pkg/bindings/containers"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// MemoryUsage implements lifecycle.MemoryAPI: one sample of the
// service's stats of container id, its MemUsage. What that counts is the service's (see
// MemoryReader): Podman 5.6 and later count as docker stats does, an
// earlier service counts the page cache too on cgroup v1 and anonymous
// memory only on cgroup v2. A rootless service on cgroup v1 has no stats.
func (p *Podman) MemoryUsage(ctx context.Context, id string) (int64, error) {
	reports, err := containers.Stats(p.ctx(ctx), []string{id}, new(containers.StatsOptions).WithStream(false))
	if err != nil {
		return 0, err
	}
	// Not streamed, the bindings send one report and close the channel;
	// it must be received, or their goroutine waits forever.
	r, ok := <-reports
	if !ok {
		return 0, errors.New("the service sent no stats")
	}
	if r.Error != nil {
		return 0, fmt.Errorf("the service's stats: %w", r.Error)
	}
	for _, s := range r.Stats {
		if s.ContainerID == id {
			return lifecycle.MemoryLess(s.MemUsage, 0)
		}
	}
	return 0, fmt.Errorf("the service's stats do not hold container %s", lifecycle.ShortID(id))
}

// SandboxMemory implements MemoryReader.
func (p *Podman) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	return p.e.SandboxMemory(ctx, engineName, ref)
}

var _ engine.MemoryReader = (*Podman)(nil)
