package live

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
