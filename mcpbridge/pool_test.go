package mcpbridge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// verifyNoLeaks fails the test if goroutines started during it outlive
// it (and its clean-ups registered later, which run first).
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// poolBridge returns a bridge on eng whose pool has size sessions.
func poolBridge(t *testing.T, eng engine.Engine, size int, once bool) *Bridge {
	t.Helper()
	b := newFixture(t, fixtureOptions{Engine: eng, Options: Options{PoolSize: size, PoolOnce: once}}).b
	if b.pool == nil {
		t.Fatal("no pool")
	}
	return b
}

// runIn runs code in the sandbox of cs and returns its output.
func runIn(t *testing.T, cs *clientSession, code string) string {
	t.Helper()
	res, err := cs.session.Execute(context.Background(), code, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return res.Stdout
}

// TestPoolFillsAndRefills fills a pool of two, takes started sessions from
// it, skips one whose sandbox died, and sees it refilled after each take.
func TestPoolFillsAndRefills(t *testing.T) {
	verifyNoLeaks(t)
	eng := newTrackingEngine(t)
	b := poolBridge(t, eng, 2, false)
	p := b.pool
	waitFor(t, "the pool to fill", func() bool { return p.readyCount() == 2 })
	if started, live := eng.counts(); started != 2 || live != 2 {
		t.Fatalf("a full pool of 2: %d started, %d live", started, live)
	}

	cs := p.take()
	if cs == nil || !cs.session.Ready() {
		t.Fatalf("take = %v, want a started session", cs)
	}
	defer cs.close()
	if out := runIn(t, cs, "print(6 * 7)"); out != "42\n" {
		t.Fatalf("a taken session's first call printed %q", out)
	}
	waitFor(t, "the pool to refill", func() bool { return p.readyCount() == 2 })
	if started, _ := eng.counts(); started != 3 {
		t.Fatalf("after one take and a refill: %d started, want 3", started)
	}

	// A pooled sandbox that died is skipped (and stopped), the next given.
	p.mu.Lock()
	dead := p.ready[0]
	p.mu.Unlock()
	dead.session.Close()
	next := p.take()
	if next == nil || next == dead || !next.session.Ready() {
		t.Fatalf("take after a pooled sandbox died = %v (dead %v)", next, dead)
	}
	defer next.close()
	waitFor(t, "the pool to refill twice", func() bool { return p.readyCount() == 2 })
	if started, _ := eng.counts(); started != 5 {
		t.Fatalf("after a dead one and another take: %d started, want 5", started)
	}
}

// TestPoolOnce starts a once pool's sessions and never refills it.
func TestPoolOnce(t *testing.T) {
	verifyNoLeaks(t)
	eng := newTrackingEngine(t)
	p := poolBridge(t, eng, 2, true).pool
	receive(t, "the once pool's filler to end", p.done)
	if started, _ := eng.counts(); started != 2 || p.readyCount() != 2 {
		t.Fatalf("a once pool of 2: %d started, %d ready", started, p.readyCount())
	}
	for i := range 2 {
		cs := p.take()
		if cs == nil || !cs.session.Ready() {
			t.Fatalf("take %d = %v, want a started session", i, cs)
		}
		defer cs.close()
	}
	if cs := p.take(); cs != nil {
		t.Fatalf("take from an empty once pool = %v, want nil", cs)
	}
	// The filler has returned: no take can make it start another.
	if started, _ := eng.counts(); started != 2 || p.readyCount() != 0 {
		t.Fatalf("a once pool after its takes: %d started, %d ready", started, p.readyCount())
	}
}

// TestPoolTakeWhileStarting takes the session the pool is starting: its
// first call waits for that start and runs in it, starting no other.
func TestPoolTakeWhileStarting(t *testing.T) {
	verifyNoLeaks(t)
	eng := newTrackingEngine(t)
	eng.gate, eng.entered = make(chan struct{}), make(chan struct{}, 1)
	p := poolBridge(t, eng, 1, true).pool
	receive(t, "the pool to start a sandbox", eng.entered)
	cs := p.take()
	if cs == nil || cs.session.Ready() {
		t.Fatalf("take while starting = %v, want the session being started", cs)
	}
	defer cs.close()
	out := make(chan string, 1)
	go func() {
		res, err := cs.session.Execute(context.Background(), "print('first')", 10*time.Second)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		out <- res.Stdout
	}()
	close(eng.gate)
	if got := receive(t, "the first call", out); got != "first\n" {
		t.Fatalf("the first call printed %q", got)
	}
	receive(t, "the once pool's filler to end", p.done)
	if started, _ := eng.counts(); started != 1 || p.readyCount() != 0 {
		t.Fatalf("%d started, %d ready; want the one start, taken", started, p.readyCount())
	}
}

// TestPoolCloseStopsAll closes a bridge whose pool is full and starting
// more: every pooled sandbox stops, and no goroutine is left.
func TestPoolCloseStopsAll(t *testing.T) {
	verifyNoLeaks(t)
	eng := newTrackingEngine(t)
	b := poolBridge(t, eng, 2, false)
	waitFor(t, "the pool to fill", func() bool { return b.pool.readyCount() == 2 })
	cs := b.pool.take() // the pool starts one more as the bridge closes
	cs.close()
	b.Close()
	if _, live := eng.counts(); live != 0 {
		t.Fatalf("%d sandboxes still run after the bridge closed", live)
	}
	receive(t, "the filler to end", b.pool.done)
	if cs := b.pool.take(); cs != nil {
		t.Fatalf("take from a closed pool = %v, want nil", cs)
	}
}

// failingEngine fails every start.
type failingEngine struct {
	mu       sync.Mutex
	attempts int
}

func (e *failingEngine) Start(context.Context, engine.Spec) (engine.Sandbox, error) {
	e.mu.Lock()
	e.attempts++
	e.mu.Unlock()
	return nil, errors.New("no container engine here")
}

func (e *failingEngine) tried() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.attempts > 0
}

// TestPoolEngineFails fills a pool on an engine whose sandboxes do not
// start: nothing panics, take gives nil, close returns at once.
func TestPoolEngineFails(t *testing.T) {
	for _, tt := range []struct {
		name string
		eng  func(t *testing.T) engine.Engine
		once bool
	}{
		{"engine error, once", func(*testing.T) engine.Engine { return &failingEngine{} }, true},
		{"engine error, refilled", func(*testing.T) engine.Engine { return &failingEngine{} }, false},
		{"sandbox exits, once", func(t *testing.T) engine.Engine { return enginetest.Local{T: t, Args: []string{"false"}} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			verifyNoLeaks(t)
			eng := tt.eng(t)
			p := poolBridge(t, eng, 2, tt.once).pool
			if tt.once {
				receive(t, "the once pool's filler to give up", p.done)
			} else {
				// Between attempts: tried, and none starting.
				fe := eng.(*failingEngine)
				waitFor(t, "a failed start", func() bool {
					p.mu.Lock()
					defer p.mu.Unlock()
					return fe.tried() && p.starting == nil
				})
			}
			if cs := p.take(); cs != nil {
				t.Fatalf("take from a pool that cannot start = %v, want nil", cs)
			}
			closed := make(chan struct{})
			go func() { p.close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(poolRetryMin):
				t.Fatalf("close waited for the retry")
			}
		})
	}
}
