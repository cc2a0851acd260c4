package lifecycle

import (
	"context"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// PullTimeout bounds one pull of a sandbox image, which runs on its own
// once begun: a caller that gives up does not stop it for the others.
const PullTimeout = 30 * time.Minute

// A pulls is the image pulls under way on one engine, by reference: a
// start that finds its image missing joins the pull already under way
// instead of making another, and every start waiting on it hears its
// progress.
type pulls struct {
	mu     sync.Mutex
	m      map[string]*pull
	ctx    context.Context // the pulls', ended by stop; nil until the first
	cancel context.CancelFunc
	wg     sync.WaitGroup // the pulls' goroutines
}

// base returns the context the pulls run under: apart from any caller's,
// ended by stop.
func (ps *pulls) base() context.Context {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ctx == nil {
		ps.ctx, ps.cancel = context.WithCancel(context.Background())
	}
	return ps.ctx
}

// stop ends the pulls under way and waits for their goroutines: an
// engine that is closed pulls nothing more, and logs nothing after.
func (ps *pulls) stop() {
	ps.mu.Lock()
	if ps.ctx == nil {
		ps.ctx, ps.cancel = context.WithCancel(context.Background())
	}
	ps.cancel()
	ps.mu.Unlock()
	ps.wg.Wait()
}

// A pull is one image pull under way and the watchers of its progress.
type pull struct {
	done chan struct{} // closed when it ended; err is set then
	err  error

	mu       sync.Mutex
	watchers map[int]engine.PullWatcher
	next     int
	last     *engine.PullProgress // the newest report, for a late watcher
}

// join returns the pull of ref, begun by begin when none is under way,
// with w watching it (nil: nobody), and the function that stops w.
func (ps *pulls) join(ref string, w engine.PullWatcher, begin func(*pull)) (*pull, func()) {
	ps.mu.Lock()
	if ps.m == nil {
		ps.m = map[string]*pull{}
	}
	p, ok := ps.m[ref]
	if !ok {
		p = &pull{done: make(chan struct{}), watchers: map[int]engine.PullWatcher{}}
		ps.m[ref] = p
	}
	ps.mu.Unlock()
	leave := p.watch(w)
	if !ok {
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			begin(p)
			ps.mu.Lock()
			delete(ps.m, ref)
			ps.mu.Unlock()
			close(p.done)
		}()
	}
	return p, leave
}

// watch adds w to p's watchers, with the newest report at once, and
// returns the function that removes it.
func (p *pull) watch(w engine.PullWatcher) func() {
	if w == nil {
		return func() {}
	}
	p.mu.Lock()
	id := p.next
	p.next++
	p.watchers[id] = w
	last := p.last
	p.mu.Unlock()
	if last != nil {
		w(*last)
	}
	return func() {
		p.mu.Lock()
		delete(p.watchers, id)
		p.mu.Unlock()
	}
}

// report sends pr to every watcher of p.
func (p *pull) report(pr engine.PullProgress) {
	p.mu.Lock()
	p.last = &pr
	ws := make([]engine.PullWatcher, 0, len(p.watchers))
	for _, w := range p.watchers {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w(pr)
	}
}
