package lifecycle

import (
	"context"
	"log/slog"
	"sync"

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
// resumable ones that run: those outlive their process on purpose, for
// another bridge to resume, and end themselves when idle.
func (e *Engine) listOrphanable(ctx context.Context) ([]engine.SandboxInfo, error) {
	all, err := e.api.List(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, c := range all {
		if c.Labels[engine.LabelResumable] != "" && c.State == "running" {
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

// leftovers are the containers of this process whose removal failed, as
// when the engine's daemon is down or restarting while a sandbox is
// closed. Every later Start, and the engine's Close, tries again, so a
// bridge that outlives an engine restart does not leave them behind
// until its next start.
type leftovers struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// add records id for another try.
func (l *leftovers) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids == nil {
		l.ids = map[string]struct{}{}
	}
	l.ids[id] = struct{}{}
}

// len returns how many containers wait for removal.
func (l *leftovers) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// retry tries to remove every recorded container once, forgetting those
// removed or already gone. It does nothing when none is recorded.
func (l *leftovers) retry(ctx context.Context, log *slog.Logger, name string, remove func(context.Context, string) error) {
	l.mu.Lock()
	ids := make([]string, 0, len(l.ids))
	for id := range l.ids {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	for _, id := range ids {
		if err := remove(ctx, id); err != nil {
			log.Debug("removing a container left behind: still failing", "engine", name, "id", ShortID(id), "err", err)
			continue
		}
		l.mu.Lock()
		delete(l.ids, id)
		l.mu.Unlock()
		log.Info("removed a container left behind when its removal failed", "engine", name, "id", ShortID(id))
	}
}

// Leftovers is the number of containers whose removal failed and that
// are kept to be tried again.
func (e *Engine) Leftovers() int { return e.left.len() }
