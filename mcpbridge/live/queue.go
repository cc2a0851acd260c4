// Package live runs a client session's run_python calls as they happen:
// one at a time and in order (Queue), followed by the client that asked
// for progress (Reporter). The bridge calls it; it knows nothing of the
// bridge.
package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// defaultMaxQueued is how many calls wait at most when NewQueue is given
// no bound.
const defaultMaxQueued = 8

// ErrQueueFull reports a call refused because its session already has as
// many calls waiting as its queue allows.
var ErrQueueFull = errors.New("too many calls waiting in this session")

// A Queue runs the calls of one session one at a time, in the order
// they arrive, with at most max of them waiting.
type Queue struct {
	max int

	mu      sync.Mutex
	busy    bool
	waiting []chan struct{} // closed to hand the turn over, oldest first
}

// NewQueue returns a queue on which at most max calls wait (zero or
// less: 8).
func NewQueue(max int) *Queue {
	if max <= 0 {
		max = defaultMaxQueued
	}
	return &Queue{max: max}
}

// Enter waits for the call's turn and returns the function that ends it.
// It fails at once with ErrQueueFull when max calls already wait, and
// with ctx's error when ctx ends first.
func (q *Queue) Enter(ctx context.Context) (leave func(), err error) {
	return q.EnterPlaced(ctx, nil)
}

// EnterPlaced is Enter, calling placed (when set) as soon as the call
// holds its place, running or in line, before it waits: a call placed
// after it runs after it.
func (q *Queue) EnterPlaced(ctx context.Context, placed func()) (leave func(), err error) {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		if placed != nil {
			placed()
		}
		return q.Leave, nil
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
		return q.Leave, nil
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
		q.Leave() // the turn came as ctx ended: pass it on
		return nil, ctx.Err()
	}
}

// Leave ends the running call's turn, handing it to the oldest waiter.
func (q *Queue) Leave() {
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

// Waiters returns how many calls wait.
func (q *Queue) Waiters() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// Claim takes the queue's turn for good when no call runs or waits, and
// reports whether it did: the session is about to be let go.
func (q *Queue) Claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.busy || len(q.waiting) > 0 {
		return false
	}
	q.busy = true
	return true
}
