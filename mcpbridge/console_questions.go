package mcpbridge

import (
	"crypto/rand"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
)

// errNoQuestion reports an answer to a question that no call waits on.
var errNoQuestion = errors.New("no such question: it was answered, or its call ended")

// An approvals holds the confirm questions waiting for an operator's
// answer on the console. A nil *approvals has none (no console).
type approvals struct {
	changed *changeSignal

	mu      sync.Mutex
	pending map[string]*pendingQuestion
}

// A pendingQuestion is a question and the channel of its answer.
type pendingQuestion struct {
	q       console.Question
	args    map[string]any    // the call's arguments, shown whole on request
	redacts func(string) bool // the keys whose values are hidden
	began   time.Time
	answer  chan approval.Answer // buffered: the first answer
}

func newApprovals(changed *changeSignal) *approvals {
	return &approvals{changed: changed, pending: map[string]*pendingQuestion{}}
}

// Post puts q (its ID set here) about a call of args (shown whole on
// request, the values of the keys redacts names hidden) before the
// console, and returns its ID, the channel of its answer and the
// function that takes it back (approval.Board).
func (a *approvals) Post(q console.Question, args map[string]any, redacts func(string) bool) (string, <-chan approval.Answer, func()) {
	q.ID = strings.ToLower(rand.Text()[:16])
	pq := &pendingQuestion{q: q, args: args, redacts: redacts, began: time.Now(), answer: make(chan approval.Answer, 1)}
	a.mu.Lock()
	a.pending[q.ID] = pq
	a.mu.Unlock()
	a.changed.notify()
	return q.ID, pq.answer, func() {
		a.mu.Lock()
		delete(a.pending, q.ID)
		a.mu.Unlock()
		a.changed.notify()
	}
}

// answer gives the question id an operator's answer: the first one
// counts, and takes the question off the console.
func (a *approvals) answer(id string, approve bool, by string) error {
	a.mu.Lock()
	pq := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if pq == nil {
		return errNoQuestion
	}
	a.changed.notify()
	pq.answer <- approval.Answer{Approve: approve, By: by}
	return nil
}

// arguments returns the function that writes the whole arguments of the
// question id (approval.WriteArguments: redacted, format characters escaped), or
// errNoQuestion.
func (a *approvals) arguments(id string) (func(io.Writer) error, error) {
	if a == nil {
		return nil, errNoQuestion
	}
	a.mu.Lock()
	pq := a.pending[id]
	a.mu.Unlock()
	if pq == nil {
		return nil, errNoQuestion
	}
	return func(w io.Writer) error {
		_, err := approval.WriteArguments(w, pq.args, pq.redacts)
		return err
	}, nil
}

// list returns the questions waiting, the oldest first.
func (a *approvals) list() []console.Question {
	out := []console.Question{}
	if a == nil {
		return out
	}
	a.mu.Lock()
	var pqs []*pendingQuestion
	for _, pq := range a.pending {
		pqs = append(pqs, pq)
	}
	a.mu.Unlock()
	slices.SortFunc(pqs, func(x, y *pendingQuestion) int { return x.began.Compare(y.began) })
	for _, pq := range pqs {
		q := pq.q
		q.Waiting = time.Since(pq.began).Seconds()
		out = append(out, q)
	}
	return out
}
