package live

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// enterAsync enters q in a goroutine and returns where its result comes.
func enterAsync(ctx context.Context, q *Queue) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		leave, err := q.Enter(ctx)
		if err != nil {
			leave = nil
		}
		got <- leave
	}()
	return got
}

// takeTurn returns the leave of a turn from enterAsync, failing the test
// when its enter failed.
func takeTurn(t *testing.T, what string, ch <-chan func()) func() {
	t.Helper()
	leave := receive(t, what, ch)
	if leave == nil {
		t.Fatalf("%s: enter failed", what)
	}
	return leave
}

func TestCallQueueFIFO(t *testing.T) {
	const n = 6
	q := NewQueue(n)
	first, err := q.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leave, err := q.Enter(context.Background())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			leave()
		}()
		// The next waiter starts once this one waits: a known order.
		waitFor(t, "waiter to queue", func() bool { return q.Waiters() == i+1 })
	}
	first()
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("turns taken in order %v, want 0…%d", order, n-1)
		}
	}
	if len(order) != n || q.Waiters() != 0 {
		t.Fatalf("%d turns, %d still waiting", len(order), q.Waiters())
	}
	// The queue is free again: the next call runs at once.
	leave, err := q.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leave()
}

func TestCallQueueFull(t *testing.T) {
	for _, tt := range []struct {
		max, waiting int
	}{
		{1, 1},
		{3, 3},
		{0, defaultMaxQueued}, // zero: the default
	} {
		q := NewQueue(tt.max)
		running, err := q.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var turns []<-chan func()
		for i := range tt.waiting {
			turns = append(turns, enterAsync(context.Background(), q))
			waitFor(t, "waiter to queue", func() bool { return q.Waiters() == i+1 })
		}
		_, err = q.Enter(context.Background())
		if !errors.Is(err, ErrQueueFull) {
			t.Fatalf("max %d: one more call: %v, want ErrQueueFull", tt.max, err)
		}
		for _, want := range []string{"too many calls waiting in this session", "wait for an answer before sending more"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("max %d: error %q lacks %q", tt.max, err, want)
			}
		}
		// The refused call took no place: the waiters run, then the queue frees.
		running()
		for _, turn := range turns {
			takeTurn(t, "a waiter's turn", turn)()
		}
		if q.Waiters() != 0 {
			t.Fatalf("max %d: %d waiting after all ran", tt.max, q.Waiters())
		}
	}
}

// TestCallQueueCancelledWaiter gives up a waiter's place, first, in the
// middle or last of three: it gets its context's error, leaves the queue
// at once, and the others get their turns in order.
func TestCallQueueCancelledWaiter(t *testing.T) {
	for _, cancelled := range []int{0, 1, 2} {
		q := NewQueue(3)
		running, err := q.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		var turns []<-chan func()
		for i := range 3 {
			if i == cancelled {
				go func() {
					leave, err := q.Enter(ctx)
					if leave != nil {
						leave()
					}
					gone <- err
				}()
			} else {
				turns = append(turns, enterAsync(context.Background(), q))
			}
			waitFor(t, "a waiter to queue", func() bool { return q.Waiters() == i+1 })
		}
		cancel()
		if err := receive(t, "the cancelled waiter", gone); !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter %d: %v, want context.Canceled", cancelled, err)
		}
		if n := q.Waiters(); n != 2 {
			t.Fatalf("waiter %d cancelled: %d waiting, want 2", cancelled, n)
		}
		// Its place is free: one more fits.
		turns = append(turns, enterAsync(context.Background(), q))
		waitFor(t, "one more waiter to queue", func() bool { return q.Waiters() == 3 })
		running()
		for i, turn := range turns {
			takeTurn(t, fmt.Sprintf("waiter %d's turn", i), turn)()
		}
		takeTurn(t, "a free queue", enterAsync(context.Background(), q))()
	}
}

// TestCallQueueTurnPassesOn hands the turn to a waiter whose context ends
// at that moment: it takes the context's way out, and the turn goes on to
// the next waiter instead of being lost.
func TestCallQueueTurnPassesOn(t *testing.T) {
	q := NewQueue(2)
	if _, err := q.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := make(chan error, 1)
	go func() {
		_, err := q.Enter(ctx)
		gone <- err
	}()
	waitFor(t, "the first waiter to queue", func() bool { return q.Waiters() == 1 })
	next := enterAsync(context.Background(), q)
	waitFor(t, "the second waiter to queue", func() bool { return q.Waiters() == 2 })
	// The running call leaves as the first waiter's context ends: the
	// turn is the waiter's (taken off the queue, as leave does) but it
	// follows its context. Its channel stays open, so that it surely does.
	q.mu.Lock()
	q.waiting = q.waiting[1:]
	cancel()
	q.mu.Unlock()
	if err := receive(t, "the cancelled waiter", gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}
	takeTurn(t, "the turn passed on", next)()
	if q.Waiters() != 0 {
		t.Fatalf("%d waiting", q.Waiters())
	}
	again, err := q.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again()
}

// TestCallQueueCancelRace ends a waiter's context as the turn comes to
// it, many times: whichever wins, exactly one turn runs at a time and the
// next waiter always gets it.
func TestCallQueueCancelRace(t *testing.T) {
	for range 100 {
		q := NewQueue(2)
		running, err := q.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		first := enterAsync(ctx, q)
		waitFor(t, "the first waiter to queue", func() bool { return q.Waiters() == 1 })
		second := enterAsync(context.Background(), q)
		waitFor(t, "the second waiter to queue", func() bool { return q.Waiters() == 2 })
		go cancel()
		running()
		if leave := receive(t, "the first waiter", first); leave != nil {
			leave() // it won its turn before its context ended
		}
		takeTurn(t, "the second waiter's turn", second)()
		if _, err := q.Enter(context.Background()); err != nil {
			t.Fatalf("the queue is not free after both: %v", err)
		}
		q.mu.Lock()
		busy := q.busy
		q.mu.Unlock()
		if !busy {
			t.Fatal("a call runs but the queue is not busy")
		}
	}
}

// TestPending: the call's code asks, the handler numbers the question
// and suspends the call under a request state, the client's answer
// resumes it once, and the call's result comes on Done.
func TestPending(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc := NewPending(cancel)
	var w Suspensions
	got := make(chan error, 1)
	go func() {
		for _, want := range []string{"accept", ""} {
			r, err := pc.Ask(ctx, &mcp.ElicitParams{Message: "Allow?"})
			if want == "" {
				if err == nil || !strings.Contains(err.Error(), "confirm-2") {
					err = errors.New("no error for a missing answer")
				} else {
					err = nil
				}
			} else if err == nil && r.Action != want {
				err = errors.New("answer " + r.Action)
			}
			if err != nil {
				got <- err
				return
			}
		}
		pc.End(&mcp.CallToolResult{})
		got <- nil
	}()
	for i, answer := range []*mcp.ElicitResult{{Action: "accept"}, nil} {
		q := receive(t, "a question", pc.Asks())
		pc.Number(q)
		if want := []string{"confirm-1", "confirm-2"}[i]; q.ID != want || q.Params.Message != "Allow?" {
			t.Fatalf("question %+v, want %s", q, want)
		}
		state := w.Suspend(pc, q)
		if !strings.HasPrefix(state, "run_python:") || !w.Has(state) {
			t.Fatalf("state %q not suspended", state)
		}
		pc2, q2 := w.Resumed(state)
		if pc2 != pc || q2 != q || w.Has(state) {
			t.Fatalf("resumed %v %v", pc2, q2)
		}
		if pc3, _ := w.Resumed(state); pc3 != nil {
			t.Fatal("resumed twice")
		}
		q.Answer(answer)
	}
	if err := receive(t, "the call's end", got); err != nil {
		t.Fatal(err)
	}
	if res := receive(t, "the result", pc.Done()); res == nil {
		t.Fatal("no result")
	}
}

// TestSuspensionsForget drops every question of a call that ended, and
// only its own.
func TestSuspensionsForget(t *testing.T) {
	var w Suspensions
	a, b := NewPending(func() {}), NewPending(func() {})
	w.SuspendAs("s1", a, NewQuestion("confirm-1", nil))
	w.SuspendAs("s2", a, NewQuestion("confirm-2", nil))
	w.SuspendAs("s3", b, NewQuestion("confirm-1", nil))
	w.Forget(a)
	if w.Has("s1") || w.Has("s2") || !w.Has("s3") {
		t.Fatalf("after Forget: %v %v %v", w.Has("s1"), w.Has("s2"), w.Has("s3"))
	}
}

// TestPendingAskEnds: a question the handler never takes, or whose
// answer never comes, ends with the call's context.
func TestPendingAskEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pc := NewPending(cancel)
	cancel()
	if _, err := pc.Ask(ctx, &mcp.ElicitParams{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("ask after the call ended: %v", err)
	}
}
