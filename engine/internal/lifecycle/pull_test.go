package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// pullAPI is an API whose image is missing until pulled: PullImage
// reports one layer's progress to its context's watcher, then waits for
// release and returns fail.
type pullAPI struct {
	API
	pulls   atomic.Int32
	present atomic.Bool
	release chan struct{}
	fail    error
}

func (p *pullAPI) HasImage(context.Context, string) (bool, error) { return p.present.Load(), nil }
func (p *pullAPI) PullImage(ctx context.Context, ref string) error {
	p.pulls.Add(1)
	if w := engine.PullWatcherOf(ctx); w != nil {
		w(engine.PullProgress{Image: ref, Layers: 2, LayersDone: 1, Bytes: 5, Total: 10})
	}
	<-p.release
	if p.fail == nil {
		p.present.Store(true)
	}
	return p.fail
}

// TestPullShared: starts that find the image missing at once make one
// pull; each hears its progress and its end; a caller that gives up does
// not stop it for the others; a failed pull is tried again by the next.
func TestPullShared(t *testing.T) {
	api := &pullAPI{release: make(chan struct{}), fail: errors.New("registry says no")}
	e := NewEngine("test", "", api, slog.New(slog.DiscardHandler), time.Second)
	var mu sync.Mutex
	heard := map[int][]engine.PullProgress{}
	watcher := func(i int) engine.PullWatcher {
		return func(p engine.PullProgress) { mu.Lock(); heard[i] = append(heard[i], p); mu.Unlock() }
	}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	gone, giveUp := context.WithCancel(context.Background())
	for i := range 3 {
		wg.Add(1)
		ctx := context.Background()
		if i == 2 {
			ctx = gone
		}
		go func() { defer wg.Done(); errs[i] = e.ensureImage(engine.WithPullWatcher(ctx, watcher(i)), "img:1") }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(heard[0]) + len(heard[1]) + len(heard[2])
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	giveUp()
	time.Sleep(20 * time.Millisecond)
	close(api.release)
	wg.Wait()
	if n := api.pulls.Load(); n != 1 {
		t.Fatalf("%d pulls for three starts, want 1", n)
	}
	for i := range 2 {
		if !errors.Is(errs[i], engine.ErrImage) {
			t.Errorf("start %d: %v, want the pull's error (ErrImage)", i, errs[i])
		}
		if len(heard[i]) == 0 || heard[i][0].LayersDone != 1 || heard[i][0].Total != 10 {
			t.Errorf("start %d heard %+v, want the pull's progress", i, heard[i])
		}
	}
	if !errors.Is(errs[2], context.Canceled) {
		t.Errorf("the start that gave up: %v", errs[2])
	}

	api.fail, api.release = nil, make(chan struct{})
	close(api.release)
	var last engine.PullProgress
	if err := e.ensureImage(engine.WithPullWatcher(context.Background(), func(p engine.PullProgress) { last = p }), "img:1"); err != nil {
		t.Fatalf("the next start: %v", err)
	}
	if n := api.pulls.Load(); n != 2 || !last.Done {
		t.Fatalf("after a failed pull the next start pulls again: %d pulls, last report %+v", n, last)
	}
	if err := e.ensureImage(context.Background(), "img:1"); err != nil || api.pulls.Load() != 2 {
		t.Fatalf("a present image: %v, %d pulls", err, api.pulls.Load())
	}
}
