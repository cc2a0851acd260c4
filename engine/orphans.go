package engine

import (
	"context"
	"log/slog"
)

// A SandboxInfo describes a container created by a bridge process.
type SandboxInfo struct {
	ID     string
	Labels map[string]string
	// State is the engine's word for it: "running", "exited", ….
	State string
}

// removeOrphans removes the containers of bridge processes of this host
// that no longer run. Failures are logged, not returned: clean-up must not
// stop the bridge from serving.
func removeOrphans(ctx context.Context, log *slog.Logger, engine string, owner Owner,
	list func(context.Context) ([]SandboxInfo, error), remove func(context.Context, string) error) {
	all, err := list(ctx)
	if err != nil {
		log.Warn("orphan clean-up", "engine", engine, "err", err)
		return
	}
	removed := 0
	for _, c := range all {
		if !owner.orphaned(c.Labels, processAlive) {
			continue
		}
		if err := remove(ctx, c.ID); err != nil {
			log.Warn("removing orphaned container", "engine", engine, "id", shortID(c.ID), "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		log.Info("removed orphaned sandbox containers", "engine", engine, "count", removed)
	}
}
