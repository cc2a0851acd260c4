package console

import (
	"crypto/rand"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrNoQuestion reports an answer to a question that no call waits on.
var ErrNoQuestion = errors.New("no such question: it was answered, or its call ended")

// A Questions holds the confirm questions waiting for an operator's
// answer on the console. A nil *Questions has none (no console).
type Questions struct {
	changed *changeSignal

	mu      sync.Mutex
	pending map[string]*Pending
}

// A Pending is a question posted and the channel of its answer.
type Pending struct {
	q      Question
	args   func(io.Writer) error // writes the call's whole arguments
	began  time.Time
	answer chan Reply // buffered: the first answer
}

// A Reply is an operator's answer to a question.
type Reply struct {
	Approve bool
	By      string // the operator's name
}

func newQuestions(changed *changeSignal) *Questions {
	return &Questions{changed: changed, pending: map[string]*Pending{}}
}

// Post puts q (its ID set here) before the console, args writing the
// call's whole arguments when an operator asks for them (redacted,
// format characters escaped), and returns it and the function that
// takes it back.
func (a *Questions) Post(q Question, args func(io.Writer) error) (*Pending, func()) {
	q.ID = strings.ToLower(rand.Text()[:16])
	pq := &Pending{q: q, args: args, began: time.Now(), answer: make(chan Reply, 1)}
	a.mu.Lock()
	a.pending[q.ID] = pq
	a.mu.Unlock()
	a.changed.notify()
	return pq, func() {
		a.mu.Lock()
		delete(a.pending, q.ID)
		a.mu.Unlock()
		a.changed.notify()
	}
}

// ID returns the question's ID.
func (pq *Pending) ID() string { return pq.q.ID }

// Answered returns the channel of the question's answer.
func (pq *Pending) Answered() <-chan Reply { return pq.answer }

// answer gives the question id an operator's answer: the first one
// counts, and takes the question off the console.
func (a *Questions) answer(id string, approve bool, by string) error {
	if a == nil {
		return ErrNoQuestion
	}
	a.mu.Lock()
	pq := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if pq == nil {
		return ErrNoQuestion
	}
	a.changed.notify()
	pq.answer <- Reply{Approve: approve, By: by}
	return nil
}

// arguments returns the function that writes the whole arguments of the
// question id, or ErrNoQuestion.
func (a *Questions) arguments(id string) (func(io.Writer) error, error) {
	if a == nil {
		return nil, ErrNoQuestion
	}
	a.mu.Lock()
	pq := a.pending[id]
	a.mu.Unlock()
	if pq == nil {
		return nil, ErrNoQuestion
	}
	return pq.args, nil
}

// List returns the questions waiting, the oldest first.
func (a *Questions) List() []Question {
	out := []Question{}
	if a == nil {
		return out
	}
	a.mu.Lock()
	var pqs []*Pending
	for _, pq := range a.pending {
		pqs = append(pqs, pq)
	}
	a.mu.Unlock()
	slices.SortFunc(pqs, func(x, y *Pending) int { return x.began.Compare(y.began) })
	for _, pq := range pqs {
		q := pq.q
		q.Waiting = time.Since(pq.began).Seconds()
		out = append(out, q)
	}
	return out
}
