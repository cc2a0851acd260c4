package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// TestLeftoversRetried records containers whose removal failed and checks
// that a retry forgets those removed or gone and keeps those still failing.
func TestLeftoversRetried(t *testing.T) {
	var l leftovers
	calls := map[string]int{}
	failing := map[string]bool{"b": true}
	remove := func(_ context.Context, id string) error {
		calls[id]++
		if failing[id] {
			return errors.New("connection refused")
		}
		return nil
	}
	log := slog.New(slog.DiscardHandler)
	l.retry(context.Background(), log, "test", remove)
	if len(calls) != 0 {
		t.Fatalf("a retry with nothing recorded removed %v", calls)
	}
	l.add("a")
	l.add("b")
	l.add("a")
	if l.len() != 2 {
		t.Fatalf("%d recorded, want 2", l.len())
	}
	l.retry(context.Background(), log, "test", remove)
	if l.len() != 1 || calls["a"] != 1 || calls["b"] != 1 {
		t.Fatalf("after one retry: %d left, calls %v; want b left, each tried once", l.len(), calls)
	}
	failing["b"] = false
	l.retry(context.Background(), log, "test", remove)
	if l.len() != 0 || calls["a"] != 1 || calls["b"] != 2 {
		t.Fatalf("after the engine is back: %d left, calls %v", l.len(), calls)
	}
}

func TestDialFailed(t *testing.T) {
	_, dialErr := net.Dial("unix", t.TempDir()+"/no.sock")
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{dialErr, true},
		{fmt.Errorf("creating container: %w", &url.Error{Op: "Post", URL: "http://d/v5/libpod/containers/create", Err: dialErr}), true},
		{&net.OpError{Op: "read", Net: "unix", Err: errors.New("connection reset by peer")}, false},
		{errors.New("no such image"), false},
		{nil, false},
	} {
		if got := DialFailed(tt.err); got != tt.want {
			t.Errorf("dialFailed(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestPodsGoneLooksUpOnce: one pass looks each owner pod up once.
func TestPodsGoneLooksUpOnce(t *testing.T) {
	ctx := context.Background()
	n := 0
	gone := podsGone(ctx, func(context.Context, engine.PodRef) bool { n++; return false })
	for range 3 {
		if !gone(engine.PodRef{Namespace: "a", Name: "b", UID: "c"}) {
			t.Fatal("a pod not alive is not gone")
		}
	}
	if n != 1 {
		t.Fatalf("looked up %d times in one pass, want 1", n)
	}
}
