package engine

import (
	"context"
	"log/slog"
	"sync"
)

// A SandboxInfo describes a container created by a bridge process.
type SandboxInfo struct {
	ID     string
	Labels map[string]string
	// State is the engine's word for it: "running", "exited", ….
	State string
}

// A volumeInfo describes a volume created for a bridge's container.
type volumeInfo struct {
	Name   string
	Labels map[string]string
}

// A volumeAPI is a containerAPI whose containers have volumes of their own
// (Docker's file-exchange directories), labelled as the containers are.
// Removing a container removes them, but a container removed otherwise
// (by hand, without its volumes) leaves them behind.
type volumeAPI interface {
	// volumes returns the volumes of every bridge process on the engine.
	volumes(ctx context.Context) ([]volumeInfo, error)
	// removeVolume removes volume name; a volume already gone is no error.
	removeVolume(ctx context.Context, name string) error
}

// removeOrphans removes the containers of bridge processes of this host
// that no longer run, then their volumes left behind. Failures are
// logged, not returned: clean-up must not stop the bridge from serving.
func (e *containerEngine) removeOrphans(ctx context.Context) {
	e.removeOrphanedContainers(ctx)
	if v, ok := e.api.(volumeAPI); ok {
		e.removeOrphanedVolumes(ctx, v)
	}
}

// removeOrphanedContainers removes the containers of bridge processes of
// this host that no longer run.
func (e *containerEngine) removeOrphanedContainers(ctx context.Context) {
	removeOrphaned(ctx, e, "container", "id", e.listOrphanable,
		func(c SandboxInfo) (string, map[string]string) { return c.ID, c.Labels }, e.api.remove)
}

// listOrphanable lists the containers of every bridge process but the
// resumable ones that run: those outlive their process on purpose, for
// another bridge to resume, and end themselves when idle.
func (e *containerEngine) listOrphanable(ctx context.Context) ([]SandboxInfo, error) {
	all, err := e.api.List(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, c := range all {
		if c.Labels[LabelResumable] != "" && c.State == "running" {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// removeOrphanedVolumes removes the volumes of bridge processes of this
// host that no longer run, which their containers' removal left behind.
func (e *containerEngine) removeOrphanedVolumes(ctx context.Context, api volumeAPI) {
	removeOrphaned(ctx, e, "volume", "volume", api.volumes,
		func(v volumeInfo) (string, map[string]string) { return v.Name, v.Labels }, api.removeVolume)
}

// removeOrphaned removes, with remove, each thing list returns that
// belongs to a bridge process of this host that no longer runs; describe
// gives a thing's name (what remove takes) and labels. noun names the
// things in the log ("container" in "removing orphaned container"), and
// key is the log attribute of a thing's name.
func removeOrphaned[T any](ctx context.Context, e *containerEngine, noun, key string,
	list func(context.Context) ([]T, error),
	describe func(T) (name string, labels map[string]string),
	remove func(context.Context, string) error,
) {
	all, err := list(ctx)
	if err != nil {
		e.log.Warn("orphan clean-up", "engine", e.name, "err", err)
		return
	}
	removed := 0
	podGone := podsGone(ctx, e.podAlive)
	for _, thing := range all {
		name, labels := describe(thing)
		if !e.owner.orphaned(labels, processAlive, podGone) {
			continue
		}
		if err := remove(ctx, name); err != nil {
			e.log.Warn("removing orphaned "+noun, "engine", e.name, key, shortID(name), "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		e.log.Info("removed orphaned sandbox "+noun+"s", "engine", e.name, "count", removed)
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
func (l *leftovers) retry(ctx context.Context, log *slog.Logger, engine string, remove func(context.Context, string) error) {
	l.mu.Lock()
	ids := make([]string, 0, len(l.ids))
	for id := range l.ids {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	for _, id := range ids {
		if err := remove(ctx, id); err != nil {
			log.Debug("removing a container left behind: still failing", "engine", engine, "id", shortID(id), "err", err)
			continue
		}
		l.mu.Lock()
		delete(l.ids, id)
		l.mu.Unlock()
		log.Info("removed a container left behind when its removal failed", "engine", engine, "id", shortID(id))
	}
}
