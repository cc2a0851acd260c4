package live

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// A recorder is a Sender that keeps what it was given.
type recorder struct {
	mu   sync.Mutex
	sent []*mcp.ProgressNotificationParams
}

func (r *recorder) send(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, p)
	return nil
}

func (r *recorder) got() []*mcp.ProgressNotificationParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), r.sent...)
}

// TestReporter sends output and the code's reports with the request's
// token, its progress increasing with every notification, and the last
// report on Stop when it had not gone out.
func TestReporter(t *testing.T) {
	var rec recorder
	r := StartReporter(context.Background(), "tok", rec.send)
	r.Output("stdout", "one\ntwo\n")
	waitFor(t, "the first notification", func() bool { return len(rec.got()) >= 1 })
	r.Progress(entrypoint.Progress{Progress: 5, Total: 10, Message: "half"})
	waitFor(t, "the report", func() bool { return len(rec.got()) >= 2 })
	r.Output("stdout", "three\n")
	time.Sleep(2 * progressInterval)
	r.Progress(entrypoint.Progress{Progress: 9, Total: 10, Message: "nearly"})
	r.Stop()
	sent := rec.got()
	if first := sent[0]; first.ProgressToken != "tok" || first.Message != "one\ntwo" {
		t.Fatalf("first notification %+v", first)
	}
	for i := 1; i < len(sent); i++ {
		if sent[i].Progress <= sent[i-1].Progress {
			t.Fatalf("progress %v after %v", sent[i].Progress, sent[i-1].Progress)
		}
	}
	if last := sent[len(sent)-1]; last.Progress != 9 || last.Total != 10 || last.Message != "nearly" {
		t.Fatalf("last notification %+v, want the last report", last)
	}
	if !strings.Contains(sent[1].Message, "half") {
		t.Fatalf("second notification %+v", sent[1])
	}
}

func TestKeepTailAndLastLines(t *testing.T) {
	if got := KeepTail("ab€", 2); got != "" {
		t.Errorf("KeepTail cut inside a character: %q", got)
	}
	if got := KeepTail("ab€", 3); got != "€" {
		t.Errorf("KeepTail = %q", got)
	}
	if got := LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("LastLines = %q", got)
	}
	if got := LastLines("only", 2); got != "only" {
		t.Errorf("LastLines = %q", got)
	}
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// receive returns what ch gives, failing the test after a while.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestReporterPull: a call waiting for its image's pull tells the client
// what it waits for, the image and how far, in increasing notifications.
func TestReporterPull(t *testing.T) {
	var rec recorder
	r := StartReporter(context.Background(), 7, rec.send)
	r.Pull(engine.PullProgress{Image: "python:3.14-slim", Layers: 3, LayersDone: 1, Bytes: 2_000_000, Total: 9_000_000})
	waitFor(t, "the pull's notification", func() bool { return len(rec.got()) >= 1 })
	r.Pull(engine.PullProgress{Image: "python:3.14-slim", Layers: 3, LayersDone: 3, Done: true})
	waitFor(t, "the pull's end", func() bool { return len(rec.got()) >= 2 })
	r.Stop()
	sent := rec.got()
	if sent[0].Message != "pulling python:3.14-slim: 1 of 3 layers, 2.0 of 9.0 MB" || sent[1].Message != "pulled python:3.14-slim" {
		t.Fatalf("messages %q, %q", sent[0].Message, sent[1].Message)
	}
	if sent[1].Progress <= sent[0].Progress {
		t.Fatalf("progress %v after %v", sent[1].Progress, sent[0].Progress)
	}
}
