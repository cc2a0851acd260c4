package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
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

func (b *fakeBoard) Post(q console.Question, args func(io.Writer) error) (string, <-chan Answer, func()) {
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

// TestShowArguments: shares (short values leave room to long ones),
// lengths stated, redaction at any depth, escapes, and the bound on
// keys.
func TestShowArguments(t *testing.T) {
	redacts := (*policy.Policy)(nil).Redacts
	args := map[string]any{
		"body":  strings.Repeat("é", 3000),
		"n":     float64(3),
		"deep":  map[string]any{"api_token": "sk-1", "list": []any{true, nil, "\x00\u2066"}},
		"emoji": "\U000E0041 tag",
	}
	shown, err := showArguments(args, redacts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(shown, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], `  "body" = "éé`) || !strings.HasSuffix(lines[0], "(cut: 6002 bytes in all)") {
		t.Fatalf("shown:\n%s", shown)
	}
	for _, want := range []string{`  "deep" = {"api_token":"[redacted]","list":[true,null,"\u0000\u2066"]}`,
		`  "emoji" = "\udb40\udc41 tag"`, `  "n" = 3`} {
		if !strings.Contains(shown, want+"\n") && !strings.HasSuffix(shown, want) {
			t.Errorf("shown lacks %s:\n%s", want, shown)
		}
	}
	if n := len(lines[0]); n < maxShownArgs-200 || n > maxShownArgs+100 {
		t.Errorf("the long value's line is %d bytes, want about its share of %d", n, maxShownArgs)
	}
	var whole strings.Builder
	n, err := WriteArguments(&whole, args, redacts)
	if err != nil || n != int64(whole.Len()) || n != argumentsLength(args, redacts) {
		t.Fatalf("WriteArguments: %d %v, %d written, length %d", n, err, whole.Len(), argumentsLength(args, redacts))
	}
	var back any
	if err := json.Unmarshal([]byte(whole.String()), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, audit.Redact(args, redacts)) {
		t.Errorf("whole arguments: %s", whole.String())
	}
	many := map[string]any{}
	for i := range maxShownKeys + 1 {
		many[fmt.Sprint("k", i)] = i
	}
	if _, err := showArguments(many, redacts); err == nil {
		t.Errorf("%d keys shown", len(many))
	}
	if s, _ := showArguments(map[string]any{}, redacts); s != "  (none)" {
		t.Errorf("no arguments: %q", s)
	}
	if got := escapeFormat("a\u202eb\u200bc\U000E0001"); got != `a\u202eb\u200bc\udb40\udc01` {
		t.Errorf("escapeFormat: %q", got)
	}
}
