package lifecycle

import (
	"context"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A LabelledVolume describes a volume created for a bridge's container.
type LabelledVolume struct {
	Name   string
	Labels map[string]string
}

// A VolumeAPI is an API whose containers have volumes of their own
// (Docker's file-exchange directories), labelled as the containers are.
// Removing a container removes them, but a container removed otherwise
// (by hand, without its volumes) leaves them behind.
type VolumeAPI interface {
	// LabelledVolumes returns the volumes of every bridge process on the
	// engine.
	LabelledVolumes(ctx context.Context) ([]LabelledVolume, error)
	// RemoveLabelledVolume removes volume name; a volume already gone is
	// no error.
	RemoveLabelledVolume(ctx context.Context, name string) error
}

// RemoveOrphans removes the containers of bridge processes of this host
// that no longer run, then their volumes left behind. Failures are
// logged, not returned: clean-up must not stop the bridge from serving.
func (e *Engine) RemoveOrphans(ctx context.Context) {
	e.removeOrphanedContainers(ctx)
	if v, ok := e.api.(VolumeAPI); ok {
		e.removeOrphanedVolumes(ctx, v)
	}
}

// removeOrphanedContainers removes the containers of bridge processes of
// this host that no longer run.
func (e *Engine) removeOrphanedContainers(ctx context.Context) {
	RemoveOrphaned(ctx, e, "container", "id", e.listOrphanable,
		func(c engine.SandboxInfo) (string, map[string]string) { return c.ID, c.Labels }, e.api.Remove)
}

// listOrphanable lists the containers of every bridge process but the
// resumable ones that run and those that sleep, until their sleep's time
// is up: those outlive their process on purpose, for another bridge to
// resume, and end themselves when idle.
func (e *Engine) listOrphanable(ctx context.Context) ([]engine.SandboxInfo, error) {
	all, err := e.api.List(ctx)
	if err != nil {
		return nil, err
	}
	asleep := e.asleep(ctx, time.Now())
	out := all[:0]
	for _, c := range all {
		if c.Labels[engine.LabelResumable] != "" && c.State == "running" || asleep[c.ID] {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// removeOrphanedVolumes removes the volumes of bridge processes of this
// host that no longer run, which their containers' removal left behind.
func (e *Engine) removeOrphanedVolumes(ctx context.Context, api VolumeAPI) {
	RemoveOrphaned(ctx, e, "volume", "volume", api.LabelledVolumes,
		func(v LabelledVolume) (string, map[string]string) { return v.Name, v.Labels }, api.RemoveLabelledVolume)
}

// RemoveOrphaned removes, with remove, each thing list returns that
// belongs to a bridge process of this host that no longer runs; describe
// gives a thing's name (what remove takes) and labels. noun names the
// things in the log ("container" in "removing orphaned container"), and
// key is the log attribute of a thing's name.
func RemoveOrphaned[T any](ctx context.Context, e *Engine, noun, key string,
	list func(context.Context) ([]T, error),
	describe func(T) (name string, labels map[string]string),
	remove func(context.Context, string) error,
) {
	all, err := list(ctx)
	if err != nil {
		e.Log.Warn("orphan clean-up", "engine", e.name, "err", err)
		return
	}
	removed := 0
	podGone := podsGone(ctx, e.PodAlive)
	for _, thing := range all {
		name, labels := describe(thing)
		if !e.Owner.orphaned(labels, processAlive, podGone) {
			continue
		}
		if err := remove(ctx, name); err != nil {
			e.Log.Warn("removing orphaned "+noun, "engine", e.name, key, ShortID(name), "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		e.Log.Info("removed orphaned sandbox "+noun+"s", "engine", e.name, "count", removed)
	}
}
