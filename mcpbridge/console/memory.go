package console

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// How the console's memory figures are read.
const (
	// memoryEvery is how old the figures may grow before a console's
	// snapshot starts a new pass.
	memoryEvery = 5 * time.Second
	// memoryPass bounds one pass over every listed sandbox.
	memoryPass = 20 * time.Second
	// memoryReads bounds the reads made at once. They are made together
	// because a Docker daemon answers a stats read at its next sampling
	// round, once a second: one after another, 64 sandboxes would take
	// a minute; together, about a second.
	memoryReads = 16
)

// A MemoryReader reads the memory a sandbox uses (engine.MemoryReader:
// Docker, Podman).
type MemoryReader interface {
	// SandboxMemory returns the bytes of memory the running sandbox
	// container ref uses on the engine named engineName ("" for a bridge
	// with one engine).
	SandboxMemory(ctx context.Context, engineName, ref string) (int64, error)
}

// A sandboxRef names a sandbox on its engine ("" for a bridge with one),
// as Sandbox does.
type sandboxRef struct {
	engine, id string
}

// A memorySampler reads the memory of the sandboxes the console lists,
// in the background, several at once: a push never waits for an engine,
// and nothing is read while no console is watching (a pass starts only
// from a snapshot). A nil *memorySampler knows nothing (an
// engine that cannot say).
type memorySampler struct {
	r       MemoryReader
	done    <-chan struct{} // the bridge closing: a pass in flight ends
	changed *changeSignal   // told when a pass brought its figures
	log     *slog.Logger

	mu      sync.Mutex
	bytes   map[sandboxRef]int64 // the last pass's figures
	began   time.Time            // when the last pass began
	running bool
}

// newMemorySampler returns the sampler of r, or nil when r is nil (an
// engine that cannot read a sandbox's memory).
func newMemorySampler(r MemoryReader, done <-chan struct{}, changed *changeSignal, log *slog.Logger) *memorySampler {
	if r == nil {
		return nil
	}
	return &memorySampler{r: r, done: done, changed: changed, log: log, bytes: map[sandboxRef]int64{}}
}

// figures returns the bytes known of each of refs (0: not known yet),
// and starts a pass over refs when the last began memoryEvery ago or
// more and none is running.
func (m *memorySampler) figures(refs []sandboxRef) map[sandboxRef]int64 {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[sandboxRef]int64, len(refs))
	for _, r := range refs {
		out[r] = m.bytes[r]
	}
	if !m.running && time.Since(m.began) >= memoryEvery && len(refs) > 0 {
		m.running, m.began = true, time.Now()
		go m.pass(append([]sandboxRef(nil), refs...))
	}
	return out
}

// pass reads the memory of refs, one after the other, and keeps the
// figures of this pass only (sandboxes gone are forgotten).
func (m *memorySampler) pass(refs []sandboxRef) {
	ctx, cancel := context.WithTimeout(context.Background(), memoryPass)
	defer cancel()
	go func() {
		select {
		case <-m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var mu sync.Mutex
	got := make(map[sandboxRef]int64, len(refs))
	var g errgroup.Group
	g.SetLimit(memoryReads)
	for _, r := range refs {
		if r.id == "" {
			continue // no sandbox yet
		}
		g.Go(func() error {
			n, err := m.r.SandboxMemory(ctx, r.engine, r.id)
			if err != nil {
				m.log.Debug("reading a sandbox's memory for the console", "container", r.id, "engine", r.engine, "err", err)
				return nil
			}
			mu.Lock()
			got[r] = n
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	m.mu.Lock()
	m.bytes, m.running = got, false
	m.mu.Unlock()
	m.changed.notify()
}
