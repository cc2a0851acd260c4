package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// maxStatsBytes bounds the stats of a container read from the Docker
// daemon: one sample is a few KiB.
const maxStatsBytes = 1 << 20

// MemoryUsage implements lifecycle.MemoryAPI: one sample of the Engine API's
// stats of container id.
func (d *Docker) MemoryUsage(ctx context.Context, id string) (int64, error) {
	res, err := d.api.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	return dockerMemory(res.Body)
}

// dockerStats is the part of the Engine API's stats of a container that
// dockerMemory reads.
type dockerStats struct {
	MemoryStats *struct {
		Usage *uint64           `json:"usage"`
		Stats map[string]uint64 `json:"stats"`
	} `json:"memory_stats"`
}

// dockerMemory returns the memory of a container as `docker stats`
// counts it, from the body of the Engine API's stats (one JSON object of
// at most maxStatsBytes): memory_stats.usage less the inactive file
// cache, stats.total_inactive_file under cgroup v1 (whose stats hold
// inactive_file too, not counting child cgroups), else stats.inactive_file
// (cgroup v2); never below 0.
func dockerMemory(r io.Reader) (int64, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxStatsBytes+1))
	if err != nil {
		return 0, fmt.Errorf("reading the engine's stats: %w", err)
	}
	if len(b) > maxStatsBytes {
		return 0, fmt.Errorf("the engine's stats exceed %d bytes", maxStatsBytes)
	}
	var st dockerStats
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&st); err != nil {
		return 0, fmt.Errorf("decoding the engine's stats: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, errors.New("decoding the engine's stats: data after the object")
	}
	if st.MemoryStats == nil || st.MemoryStats.Usage == nil {
		return 0, errors.New("the engine's stats hold no memory usage (memory_stats.usage)")
	}
	usage := *st.MemoryStats.Usage
	inactive, ok := st.MemoryStats.Stats["total_inactive_file"]
	if !ok {
		inactive = st.MemoryStats.Stats["inactive_file"]
	}
	return lifecycle.MemoryLess(usage, inactive)
}

// SandboxMemory implements MemoryReader.
func (d *Docker) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	return d.e.SandboxMemory(ctx, engineName, ref)
}

var _ engine.MemoryReader = (*Docker)(nil)
