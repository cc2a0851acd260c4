package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// limitsAPI is an API whose engine answers why (or fails with err) when
// asked about limits, recording the calls that matter here.
type limitsAPI struct {
	API
	mu    sync.Mutex
	asked int
	why   string
	err   error
	calls []string
}

func (a *limitsAPI) record(c string) { a.mu.Lock(); a.calls = append(a.calls, c); a.mu.Unlock() }

func (a *limitsAPI) WeakLimits(context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	return a.why, a.err
}
func (a *limitsAPI) ConnFailed(error) bool                             { return false }
func (a *limitsAPI) HasImage(context.Context, string) (bool, error)    { return true, nil }
func (a *limitsAPI) Verify(context.Context, string, engine.Spec) error { return nil }
func (a *limitsAPI) Create(context.Context, engine.Spec, Owner, string) (string, error) {
	a.record("create")
	return "c1", nil
}
func (a *limitsAPI) Stop(context.Context, string, time.Duration) error { a.record("stop"); return nil }
func (a *limitsAPI) Remove(context.Context, string) error              { a.record("remove"); return nil }
func (a *limitsAPI) Ops(string) Ops                                    { return limitsOps{a} }

// limitsOps records an attach and a start, and runs nothing.
type limitsOps struct{ a *limitsAPI }

func (o limitsOps) Attach(context.Context, *Pipe, *Pipe) (io.WriteCloser, <-chan struct{}, error) {
	o.a.record("attach")
	return nopWriteCloser{}, nil, nil
}
func (o limitsOps) Start(context.Context) error { o.a.record("start"); return nil }
func (o limitsOps) Wait(ctx context.Context) (engine.ExitStatus, error) {
	<-ctx.Done()
	return engine.ExitStatus{}, ctx.Err()
}
func (o limitsOps) Detach()                                      {}
func (o limitsOps) Signal(context.Context, syscall.Signal) error { return nil }
func (o limitsOps) CopyOut(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.ErrUnsupported
}
func (o limitsOps) CopyIn(context.Context, string, io.Reader) error { return errors.ErrUnsupported }

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

var limitsSpec = engine.Spec{Cmd: []string{"python3"}, Session: "s"}

// TestWeakLimitsRefused: on an engine that cannot apply the limits, a
// start creates the container and removes it, never starting it, with
// ErrWeakLimits saying why and what to do; the engine is asked once.
func TestWeakLimitsRefused(t *testing.T) {
	api := &limitsAPI{why: "rootless Podman on cgroup v1 ignores memory, pids and CPU limits"}
	e := NewEngine("podman", "unix:///run/user/1000/podman/podman.sock", api, slog.New(slog.DiscardHandler), time.Second)
	defer e.Close()
	for range 2 {
		_, err := e.Start(context.Background(), limitsSpec)
		if !errors.Is(err, engine.ErrWeakLimits) || !strings.Contains(err.Error(), api.why) || !strings.Contains(err.Error(), "MCP_BRIDGE_ALLOW_WEAK_LIMITS=1") ||
			!strings.Contains(err.Error(), "podman at unix:///run/user/1000/podman/podman.sock") {
			t.Fatalf("Start: %v", err)
		}
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if got := strings.Join(api.calls, " "); got != "create stop remove create stop remove" {
		t.Errorf("calls %q: want each container removed unstarted", got)
	}
	if api.asked != 1 {
		t.Errorf("the engine was asked %d times, want once", api.asked)
	}
}

// TestWeakLimitsAllowed: with AllowWeakLimits the sandbox starts and one
// warning names why, however many start; an engine that applies them
// starts sandboxes without a word; a failed question fails the start and
// is asked again by the next.
func TestWeakLimitsAllowed(t *testing.T) {
	var logs bytes.Buffer
	api := &limitsAPI{why: "the Docker daemon cannot apply memory, pids limits (cgroup v1)"}
	e := NewEngine("docker", "", api, slog.New(slog.NewTextHandler(&logs, nil)), time.Second)
	defer e.Close()
	e.AllowWeakLimits = true
	for range 2 {
		sb, err := e.Start(context.Background(), limitsSpec)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		sb.Close()
	}
	if n := strings.Count(logs.String(), "sandboxes run without memory, pids and CPU limits"); n != 1 || !strings.Contains(logs.String(), "cgroup v1") {
		t.Errorf("%d warnings: %s", n, logs.String())
	}

	ok := &limitsAPI{}
	e2 := NewEngine("docker", "", ok, slog.New(slog.DiscardHandler), time.Second)
	defer e2.Close()
	if sb, err := e2.Start(context.Background(), limitsSpec); err != nil {
		t.Fatalf("an engine that applies limits: %v", err)
	} else {
		sb.Close()
	}

	failing := &limitsAPI{err: errors.New("info: connection reset")}
	e3 := NewEngine("podman", "", failing, slog.New(slog.DiscardHandler), time.Second)
	defer e3.Close()
	if _, err := e3.Start(context.Background(), limitsSpec); err == nil || !strings.Contains(err.Error(), "checking that the engine applies the sandbox's limits: info: connection reset") {
		t.Fatalf("a failed question: %v", err)
	}
	failing.mu.Lock()
	failing.err = nil
	failing.mu.Unlock()
	if sb, err := e3.Start(context.Background(), limitsSpec); err != nil || failing.asked != 2 {
		t.Fatalf("after a failed question: %v (asked %d times)", err, failing.asked)
	} else {
		sb.Close()
	}
}
