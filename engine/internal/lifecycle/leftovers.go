package lifecycle

import (
	"context"
	"log/slog"
	"sync"
)

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
