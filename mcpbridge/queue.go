package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// defaultMaxQueuedCalls is the zero value of Options.MaxQueuedCalls.
const defaultMaxQueuedCalls = 8

// ErrQueueFull reports a call refused because its session already has as
// many calls waiting as Options.MaxQueuedCalls allows.
var ErrQueueFull = errors.New("too many calls waiting in this session")

// A callQueue runs the calls of one session one at a time, in the order
// they arrive, with at most max of them waiting.
type callQueue struct {
	max int

	mu      sync.Mutex
	busy    bool
	waiting []chan struct{} // closed to hand the turn over, oldest first
}

func newCallQueue(max int) *callQueue {
	if max <= 0 {
		max = defaultMaxQueuedCalls
	}
	return &callQueue{max: max}
}

// enter waits for the call's turn and returns the function that ends it.
// It fails at once with ErrQueueFull when max calls already wait, and
// with ctx's error when ctx ends first.
func (q *callQueue) enter(ctx context.Context) (leave func(), err error) {
	return q.enterPlaced(ctx, nil)
}

// enterPlaced is enter, calling placed (when set) as soon as the call
// holds its place, running or in line, before it waits: a call placed
// after it runs after it.
func (q *callQueue) enterPlaced(ctx context.Context, placed func()) (leave func(), err error) {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		if placed != nil {
			placed()
		}
		return q.leave, nil
	}
	if len(q.waiting) >= q.max {
		q.mu.Unlock()
		return nil, fmt.Errorf("%w (%d wait behind the running one); wait for an answer before sending more", ErrQueueFull, q.max)
	}
	turn := make(chan struct{})
	q.waiting = append(q.waiting, turn)
	q.mu.Unlock()
	if placed != nil {
		placed()
	}
	select {
	case <-turn:
		return q.leave, nil
	case <-ctx.Done():
		q.mu.Lock()
		for i, w := range q.waiting {
			if w == turn {
				q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
				q.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		q.mu.Unlock()
		q.leave() // the turn came as ctx ended: pass it on
		return nil, ctx.Err()
	}
}

// leave ends the running call's turn, handing it to the oldest waiter.
func (q *callQueue) leave() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.busy = false
		return
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	close(next)
}

// waiters returns how many calls wait.
func (q *callQueue) waiters() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// claim takes the queue's turn for good when no call runs or waits, and
// reports whether it did: the session is about to be let go.
func (q *callQueue) claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.busy || len(q.waiting) > 0 {
		return false
	}
	q.busy = true
	return true
}
