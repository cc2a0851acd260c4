package approval

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// A fakeBoard answers every question it is given with its answer, or
// never when it has none; it keeps the questions and counts withdrawals.
type fakeBoard struct {
	answer    *Answer
	posted    []console.Question
	withdrawn int
}

func (b *fakeBoard) Post(q console.Question, args map[string]any, redacts func(string) bool) (string, <-chan Answer, func()) {
	q.ID = "q1"
	b.posted = append(b.posted, q)
	ch := make(chan Answer, 1)
	if b.answer != nil {
		ch <- *b.answer
	}
	return q.ID, ch, func() { b.withdrawn++ }
}

// consoleRequest is a call of stub's get-sum that an operator on the
// console confirms.
func consoleRequest() Request {
	return Request{
		Policy:  &policy.Policy{ConfirmVia: []string{policy.ViaConsole}},
		Verdict: policy.Verdict{Kind: policy.Confirm, Rule: `servers["stub"].confirm "get-sum"`},
		Session: "session-1", Server: "stub", Tool: "get\u202e-sum",
		Args: map[string]any{"a": float64(40), "api_token": "sk-1"},
	}
}

// TestConfirmOnBoard: the operator's answer decides, the question shows
// the call (names escaped, secrets redacted, the code's line) and is
// withdrawn once answered; the audit fields say who answered.
func TestConfirmOnBoard(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := WithCodeLine(context.Background(), 3)
	for _, approve := range []bool{true, false} {
		board := &fakeBoard{answer: &Answer{Approve: approve, By: "Ada"}}
		outcome, extra, err := Confirm(ctx, &Call{Ctx: ctx}, board, log, consoleRequest())
		if approve && (outcome != "accepted" || err != nil) || !approve && (outcome != "declined" || !errors.Is(err, policy.ErrRefused)) {
			t.Fatalf("approve %v: %q, %v", approve, outcome, err)
		}
		if len(extra) != 4 || extra[1] != "console" || extra[3] != "Ada" {
			t.Fatalf("audit fields %v", extra)
		}
		if len(board.posted) != 1 || board.withdrawn != 1 {
			t.Fatalf("%d posted, %d withdrawn", len(board.posted), board.withdrawn)
		}
		q := board.posted[0]
		if q.Session != "session-1" || q.Tool != `get\u202e-sum` || q.Line != 3 || !strings.Contains(q.Arguments, `"a" = 40`) ||
			strings.Contains(q.Arguments, "sk-1") || !strings.Contains(q.Message, "line 3") {
			t.Fatalf("question %+v", q)
		}
	}
}

// TestConfirmUnanswered: a question nobody answers fails the call when
// its context ends; one that names the console without a console, or
// the client without a call in progress, fails at once.
func TestConfirmUnanswered(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	board := &fakeBoard{}
	outcome, extra, err := Confirm(ctx, &Call{Ctx: ctx}, board, log, consoleRequest())
	if outcome != "declined" || !errors.Is(err, policy.ErrRefused) || !strings.Contains(err.Error(), "nobody answered on the console") ||
		len(extra) != 2 || extra[1] != "none" || board.withdrawn != 1 {
		t.Fatalf("unanswered: %q %v %v, %d withdrawn", outcome, extra, err, board.withdrawn)
	}
	if _, _, err := Confirm(context.Background(), &Call{Ctx: ctx}, nil, log, consoleRequest()); !errors.Is(err, policy.ErrRefused) ||
		!strings.Contains(err.Error(), "serves no console") {
		t.Fatalf("without a console: %v", err)
	}
	r := consoleRequest()
	r.Policy = nil // the client alone
	if _, _, err := Confirm(context.Background(), nil, board, log, r); !errors.Is(err, policy.ErrRefused) ||
		!strings.Contains(err.Error(), "no run_python call is in progress") {
		t.Fatalf("without a call: %v", err)
	}
}
