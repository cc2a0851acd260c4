package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// A MemoryReader is an Engine that reads how much memory a running
// sandbox uses. Docker and Podman are (Auto and Multi when their backends
// are); Kubernetes is not: it would need a metrics server, which the
// bridge does not assume.
type MemoryReader interface {
	// SandboxMemory returns the bytes of memory the running sandbox
	// container ref (an ID or its prefix as Session.Sandbox returns it)
	// on the engine named engineName uses, as `docker stats` counts it:
	// the cgroup's usage less its inactive file cache. engineName is ""
	// for a bridge with one engine, else a name of MCP_BRIDGE_ENGINES
	// (as for Resumer.Resume and FileReacher.SandboxFiles). Errors wrap
	// ErrNoSandbox, ErrSandboxExited or ErrOtherEngine as SandboxFiles'
	// do.
	//
	// Docker's figure is computed here from the Engine API's stats.
	// Podman's is the service's own MemUsage, which counts as docker
	// stats does from Podman 5.6; an earlier service counts the page
	// cache too on cgroup v1 (memory.usage_in_bytes whole) and only
	// anonymous memory on cgroup v2 (memory.stat's anon). A Docker
	// daemon samples the containers whose stats are asked for once a
	// second: a read within a second of another waits for the next
	// round (up to a second); reads of several sandboxes made at once
	// share one.
	SandboxMemory(ctx context.Context, engineName, ref string) (int64, error)
}

// A memoryAPI is a containerAPI that reads its containers' memory.
type memoryAPI interface {
	// memoryUsage returns the memory of the running container id (a
	// full ID), as MemoryReader.SandboxMemory counts it.
	memoryUsage(ctx context.Context, id string) (int64, error)
}

// doingMemory names SandboxMemory in its errors.
const doingMemory = "reading a sandbox's memory"

// sandboxMemory implements MemoryReader.SandboxMemory for a backend: the
// sandbox is checked as for SandboxFiles, then its memory read.
func (e *containerEngine) sandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	api, st, err := e.runningSandbox(ctx, engineName, ref, doingMemory)
	if err != nil {
		return 0, err
	}
	m, ok := e.api.(memoryAPI)
	if !ok {
		return 0, fmt.Errorf("%s: the %s backend cannot", doingMemory, e.name)
	}
	n, err := m.memoryUsage(ctx, st.ID)
	if err == nil {
		return n, nil
	}
	// The sandbox may have ended since it was inspected: say so rather
	// than how the engine's stats failed.
	if ctx.Err() == nil {
		if now, ierr := api.inspectSandbox(ctx, st.ID); errors.Is(ierr, ErrNoSandbox) {
			return 0, fmt.Errorf("%s: %w", doingMemory, ierr)
		} else if ierr == nil && !now.Running {
			return 0, fmt.Errorf("%s: %w", doingMemory, &ExitedError{Code: now.ExitCode})
		}
	}
	return 0, fmt.Errorf("%s: sandbox %s on %s: %w", doingMemory, shortID(st.ID), e.name, err)
}

// maxStatsBytes bounds the stats of a container read from the Docker
// daemon: one sample is a few KiB.
const maxStatsBytes = 1 << 20

// memoryUsage implements memoryAPI: one sample of the Engine API's
// stats of container id.
func (d *Docker) memoryUsage(ctx context.Context, id string) (int64, error) {
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
	return memoryLess(usage, inactive)
}

// memoryLess returns usage less inactive, 0 when inactive is larger; an
// error when the difference does not fit an int64 (no memory is that
// large).
func memoryLess(usage, inactive uint64) (int64, error) {
	if inactive >= usage {
		return 0, nil
	}
	n := usage - inactive
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("the engine reports an implausible memory usage of %d bytes", n)
	}
	return int64(n), nil
}

// SandboxMemory implements MemoryReader.
func (d *Docker) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	return d.e.sandboxMemory(ctx, engineName, ref)
}

// SandboxMemory implements MemoryReader, on a backend that can.
func (a *Auto) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return 0, err
	}
	r, ok := b.(MemoryReader)
	if !ok {
		return 0, fmt.Errorf("%s: the %s backend cannot", doingMemory, b.Name())
	}
	return r.SandboxMemory(ctx, engineName, ref)
}

// SandboxMemory implements MemoryReader: on the member engineName names.
func (m *Multi) SandboxMemory(ctx context.Context, engineName, ref string) (int64, error) {
	mb, err := m.member(engineName)
	if err != nil {
		return 0, err
	}
	r, ok := mb.eng.(MemoryReader)
	if !ok {
		return 0, fmt.Errorf("%s: the %s engine cannot", doingMemory, mb.name)
	}
	return r.SandboxMemory(ctx, "", ref)
}

var (
	_ MemoryReader = (*Docker)(nil)
	_ MemoryReader = (*Podman)(nil)
	_ MemoryReader = (*Auto)(nil)
	_ MemoryReader = (*Multi)(nil)
)
