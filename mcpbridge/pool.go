package mcpbridge

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Backoff of a pool whose sandboxes fail to start.
const (
	poolRetryMin = time.Second
	poolRetryMax = 30 * time.Second
)

// A sandboxPool keeps started client sessions (container up, interpreter
// and sandbox API loaded) ready for new clients, and refills itself in the
// background, one start at a time. A pooled session has served no client
// and serves exactly one: take hands it over for good.
type sandboxPool struct {
	size  int
	once  bool                  // fill once, never refill
	fresh func() *clientSession // a new, unstarted session
	start func(context.Context, *clientSession) error
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the filler returns
	wake   chan struct{} // a take asks for a refill

	mu       sync.Mutex
	ready    []*clientSession // started, oldest first
	starting *clientSession   // being started, not yet taken
	closed   bool
}

// newSandboxPool starts filling a pool of size sessions made by fresh and
// started by start; a pool of size 0 (nil) keeps none.
func newSandboxPool(size int, once bool, fresh func() *clientSession, start func(context.Context, *clientSession) error, log *slog.Logger) *sandboxPool {
	if size <= 0 {
		return nil
	}
	p := &sandboxPool{size: size, once: once, fresh: fresh, start: start, log: log, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.fill()
	return p
}

// take returns a started session, or the one being started (its first
// call waits for that start rather than beginning another), or nil when
// the pool has none.
func (p *sandboxPool) take() *clientSession {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	var cs *clientSession
	var dead []*clientSession
	for cs == nil && len(p.ready) > 0 {
		cs = p.ready[0]
		p.ready = p.ready[1:]
		if !cs.session.Ready() {
			dead = append(dead, cs) // its container died while it waited
			cs = nil
		}
	}
	if cs == nil && p.starting != nil {
		cs, p.starting = p.starting, nil
	}
	p.mu.Unlock()
	for _, d := range dead {
		p.log.Info("a pooled sandbox had died; it is replaced", "session", d.name)
		go d.close()
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return cs
}

// fill keeps the pool full until it is closed; a once pool starts its
// sessions and stops, whether they were taken or failed.
func (p *sandboxPool) fill() {
	defer close(p.done)
	if p.once {
		for range p.size {
			if !p.startOne() {
				return // the client's first call starts its own
			}
		}
		return
	}
	retry := poolRetryMin
	for {
		p.mu.Lock()
		want := !p.closed && len(p.ready) < p.size
		p.mu.Unlock()
		if !want {
			select {
			case <-p.wake:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		if p.startOne() {
			retry = poolRetryMin
			continue
		}
		select {
		case <-time.After(retry):
			retry = min(2*retry, poolRetryMax)
		case <-p.ctx.Done():
			return
		}
	}
}

// startOne starts one session into the pool and reports whether it
// started. A session taken while it starts is the taker's, whatever
// comes of its start.
func (p *sandboxPool) startOne() bool {
	cs := p.fresh()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cs.close()
		return false
	}
	p.starting = cs
	p.mu.Unlock()
	began := time.Now()
	err := p.start(p.ctx, cs)
	p.mu.Lock()
	taken := p.starting != cs
	p.starting = nil
	closed := p.closed
	if err == nil && !taken && !closed {
		p.ready = append(p.ready, cs)
	}
	p.mu.Unlock()
	switch {
	case taken:
		if err != nil {
			p.log.Debug("the pooled sandbox taken while starting did not start; its first call starts one", "session", cs.name, "err", err)
		}
		return true
	case err != nil:
		if p.ctx.Err() == nil {
			p.log.Warn("starting a pooled sandbox", "err", err)
		}
		cs.close()
		return false
	case closed:
		cs.close()
		return false
	}
	p.log.Debug("pooled sandbox ready", "session", cs.name, "took", time.Since(began))
	return true
}

// close stops the filler and every session still in the pool.
func (p *sandboxPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	p.cancel()
	<-p.done
	var wg sync.WaitGroup
	for _, cs := range ready {
		wg.Add(1)
		go func() { defer wg.Done(); cs.close() }()
	}
	wg.Wait()
}

// readyCount returns how many sessions are ready.
func (p *sandboxPool) readyCount() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}
