package auto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A fakeMember is a memberEngine whose reachability a test switches.
type fakeMember struct {
	name string

	mu       sync.Mutex
	down     bool  // Start and Ping fail as an unreachable engine does
	silent   bool  // Ping waits for its context, as an engine that never answers
	startErr error // Start fails with it (an answer, not a failure to reach)
	starts   int
	pings    int
	closed   bool
}

func (f *fakeMember) set(down bool, startErr error) {
	f.mu.Lock()
	f.down, f.startErr = down, startErr
	f.mu.Unlock()
}

func (f *fakeMember) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts++
	if f.down {
		return nil, fmt.Errorf("%w: %s: dial tcp: connection refused", engine.ErrNoEngine, f.name)
	}
	if f.startErr != nil {
		return nil, f.startErr
	}
	return &fakeSandbox{id: fmt.Sprintf("%s-%d", f.name, f.starts)}, nil
}

func (f *fakeMember) Ping(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pings++
	if f.silent {
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return ctx.Err()
	}
	if f.down {
		return errors.New("dial tcp: connection refused")
	}
	return nil
}

func (f *fakeMember) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func (f *fakeMember) counts() (starts, pings int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts, f.pings
}

// A fakeSandbox is a Sandbox with nothing behind it.
type fakeSandbox struct {
	id     string
	closed int
}

func (s *fakeSandbox) ID() string            { return s.id }
func (s *fakeSandbox) Stdin() io.WriteCloser { return nil }
func (s *fakeSandbox) Stdout() io.Reader     { return strings.NewReader("") }
func (s *fakeSandbox) Stderr() io.Reader     { return strings.NewReader("") }
func (s *fakeSandbox) Wait(context.Context) (engine.ExitStatus, error) {
	return engine.ExitStatus{}, nil
}
func (s *fakeSandbox) Close() error { s.closed++; return nil }

// newTestMulti returns a Multi over fake engines named names, with a
// clock the test moves.
func newTestMulti(names ...string) (*Multi, []*fakeMember, *time.Time) {
	clock := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	m := &Multi{log: lifecycle.LoggerOrDiscard(nil), now: func() time.Time { return clock }}
	m.opts.ProbeTimeout, m.opts.MaxBackoff = time.Second, 8*time.Second
	var fakes []*fakeMember
	for _, n := range names {
		f := &fakeMember{name: n}
		fakes = append(fakes, f)
		m.members = append(m.members, &member{name: n, eng: f})
	}
	return m, fakes, &clock
}

func placedOn(t *testing.T, sb engine.Sandbox) string {
	t.Helper()
	p, ok := sb.(*placedSandbox)
	if !ok {
		t.Fatalf("sandbox is a %T, not placed by the Multi", sb)
	}
	return p.Engine()
}

func TestMultiPlacesOnLeastLoaded(t *testing.T) {
	m, _, _ := newTestMulti("a", "b", "c")
	ctx := context.Background()
	var got []string
	var sbs []engine.Sandbox
	for range 5 {
		sb, err := m.Start(ctx, engine.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		sbs = append(sbs, sb)
		got = append(got, placedOn(t, sb))
	}
	if want := "a b c a b"; strings.Join(got, " ") != want {
		t.Fatalf("placed on %v, want %s", got, want)
	}
	// Closing one of a's frees its place: a, b and c then have 1, 2
	// and 1 open, and a is listed first.
	sbs[0].Close()
	sbs[0].Close() // twice: counted once
	sb, err := m.Start(ctx, engine.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if e := placedOn(t, sb); e != "a" {
		t.Fatalf("after a sandbox on a closed, placed on %s, want a", e)
	}
	st := m.Engines()
	if st[0].Sandboxes != 2 || st[1].Sandboxes != 2 || st[2].Sandboxes != 1 {
		t.Fatalf("engine states %+v, want 2, 2, 1 sandboxes", st)
	}
}

func TestMultiFailsOverAndBacksOff(t *testing.T) {
	m, fakes, clock := newTestMulti("a", "b")
	ctx := context.Background()
	fakes[0].set(true, nil)
	sb, err := m.Start(ctx, engine.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if e := placedOn(t, sb); e != "b" {
		t.Fatalf("with a down, placed on %s, want b", e)
	}
	st := m.Engines()
	if st[0].Up || !strings.Contains(st[0].Error, "connection refused") || st[0].Sandboxes != 0 {
		t.Fatalf("a's state %+v, want down with its error and no sandbox", st[0])
	}
	// While a backs off, b is used though it is busier; a is not tried.
	startsA, _ := fakes[0].counts()
	if _, err := m.Start(ctx, engine.Spec{}); err != nil {
		t.Fatal(err)
	}
	if s, _ := fakes[0].counts(); s != startsA {
		t.Fatalf("a was started during its backoff")
	}
	// After the backoff a is pinged; it still fails: the wait doubles.
	*clock = clock.Add(1100 * time.Millisecond)
	if _, err := m.Start(ctx, engine.Spec{}); err != nil {
		t.Fatal(err)
	}
	if _, p := fakes[0].counts(); p != 2 {
		t.Fatalf("a pinged %d times (first use, after its backoff), want 2", p)
	}
	*clock = clock.Add(1100 * time.Millisecond) // < 2 s: still backing off
	if _, err := m.Start(ctx, engine.Spec{}); err != nil {
		t.Fatal(err)
	}
	if _, p := fakes[0].counts(); p != 2 {
		t.Fatalf("a pinged during its second backoff")
	}
	// a answers again: after the backoff it gets the next sandbox (0 open
	// against b's 4) and is up.
	fakes[0].set(false, nil)
	*clock = clock.Add(time.Second)
	sb, err = m.Start(ctx, engine.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if e := placedOn(t, sb); e != "a" {
		t.Fatalf("a back up: placed on %s, want a", e)
	}
	if st := m.Engines(); !st[0].Up || st[0].Error != "" {
		t.Fatalf("a's state %+v, want up", st[0])
	}
}

func TestMultiBackoffCapped(t *testing.T) {
	m, fakes, clock := newTestMulti("a", "b")
	fakes[0].set(true, nil)
	for range 40 {
		*clock = clock.Add(time.Hour) // every start tries a again
		if _, err := m.Start(context.Background(), engine.Spec{}); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	wait := m.members[0].retryAt.Sub(m.now())
	m.mu.Unlock()
	if wait != 8*time.Second {
		t.Fatalf("backoff after 40 failures %v, want the cap 8s", wait)
	}
}

func TestMultiAllDown(t *testing.T) {
	m, fakes, _ := newTestMulti("a", "b")
	fakes[0].set(true, nil)
	fakes[1].set(true, nil)
	_, err := m.Start(context.Background(), engine.Spec{})
	if !errors.Is(err, engine.ErrNoEngine) {
		t.Fatalf("err = %v, want ErrNoEngine", err)
	}
	for _, want := range []string{"MCP_BRIDGE_ENGINES", "a: ", "b: ", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Every engine backing off: they are still tried (pinged), the one
	// whose backoff ends first first, so that one back up is used.
	fakes[1].set(false, nil)
	sb, err := m.Start(context.Background(), engine.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if e := placedOn(t, sb); e != "b" {
		t.Fatalf("placed on %s, want b", e)
	}
	if err := m.Ping(context.Background()); err != nil {
		t.Fatalf("Ping with b up: %v", err)
	}
}

func TestMultiStartErrorTriesNext(t *testing.T) {
	m, fakes, _ := newTestMulti("a", "b")
	fakes[0].set(false, fmt.Errorf("%w: image %q is not present", engine.ErrImage, "x"))
	sb, err := m.Start(context.Background(), engine.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if e := placedOn(t, sb); e != "b" {
		t.Fatalf("placed on %s, want b", e)
	}
	if st := m.Engines(); !st[0].Up || st[0].Sandboxes != 0 {
		t.Fatalf("a's state %+v: an answer is no failure to reach", st[0])
	}
	fakes[1].set(false, errors.New("no space left on device"))
	_, err = m.Start(context.Background(), engine.Spec{})
	if err == nil || errors.Is(err, engine.ErrNoEngine) {
		t.Fatalf("err = %v, want a start error that is not ErrNoEngine", err)
	}
	for _, want := range []string{"no engine could start it", "a: ", "not present", "b: no space left"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestMultiPingAndClose(t *testing.T) {
	m, fakes, _ := newTestMulti("a", "b")
	fakes[0].set(true, nil)
	if err := m.Ping(context.Background()); err != nil {
		t.Fatalf("Ping with b up: %v", err)
	}
	if st := m.Engines(); st[0].Up || !st[1].Up {
		t.Fatalf("states after a ping %+v, want a down, b up", st)
	}
	fakes[1].set(true, nil)
	if err := m.Ping(context.Background()); !errors.Is(err, engine.ErrNoEngine) || !strings.Contains(err.Error(), "b: ") {
		t.Fatalf("Ping with both down: %v", err)
	}
	if n := m.Name(); n != "a,b" {
		t.Fatalf("Name %q", n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !fakes[0].closed || !fakes[1].closed {
		t.Fatal("Close left an engine open")
	}
	if _, err := m.Start(context.Background(), engine.Spec{}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestMultiCancelled(t *testing.T) {
	m, fakes, clock := newTestMulti("a", "b")
	fakes[0].set(true, nil)
	m.Start(context.Background(), engine.Spec{}) // a now backs off
	*clock = clock.Add(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Start(ctx, engine.Spec{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Start: %v", err)
	}
	if st := m.Engines(); st[0].Sandboxes != 0 || st[1].Sandboxes != 1 {
		t.Fatalf("a cancelled start left counts %+v", st)
	}
}

func TestNewMultiNeedsEndpoints(t *testing.T) {
	if _, err := NewMulti(&MultiOptions{}); err == nil {
		t.Fatal("NewMulti without endpoints succeeded")
	}
	m, err := NewMulti(&MultiOptions{Endpoints: []engine.Endpoint{{Backend: engine.BackendDocker, Address: "tcp://127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := m.Name(); n != "docker@tcp://127.0.0.1:1" {
		t.Fatalf("Name %q", n)
	}
}

func TestMultiSilentEngineCostsProbeTimeout(t *testing.T) {
	m, fakes, _ := newTestMulti("a", "b")
	m.now = time.Now
	m.opts.ProbeTimeout = 200 * time.Millisecond
	fakes[0].mu.Lock()
	fakes[0].silent = true
	fakes[0].mu.Unlock()
	began := time.Now()
	sb, err := m.Start(context.Background(), engine.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if e := placedOn(t, sb); e != "b" {
		t.Fatalf("placed on %s, want b", e)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("a silent engine held the start %v", took)
	}
	if s, _ := fakes[0].counts(); s != 0 {
		t.Fatal("a silent engine was asked to start a sandbox")
	}
	if st := m.Engines(); st[0].Up || !strings.Contains(st[0].Error, "no answer within 200ms") {
		t.Fatalf("a's state %+v", st[0])
	}
}

func TestNewMultiHandsContextsToBackends(t *testing.T) {
	eps, err := engine.ParseEndpoints("docker@colima, podman@machine-default, docker=tcp://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMulti(&MultiOptions{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := []struct{ name, dockerCtx, podmanConn, host string }{
		{"docker@colima", "colima", "colima", ""},
		{"podman@machine-default", "machine-default", "machine-default", ""},
		{"docker@tcp://127.0.0.1:1", "", "", "tcp://127.0.0.1:1"},
	}
	for i, mb := range m.members {
		a, ok := mb.eng.(*Auto)
		if !ok {
			t.Fatalf("member %d is a %T, want *Auto", i, mb.eng)
		}
		d, p := a.dockerOptions(), a.podmanOptions()
		if mb.name != want[i].name || a.opts.Backend != eps[i].Backend || d.Context != want[i].dockerCtx ||
			p.Connection != want[i].podmanConn || d.Host != want[i].host || p.URI != want[i].host {
			t.Errorf("member %d: name %q, docker %+v, podman %+v; want %+v", i, mb.name, d, p, want[i])
		}
	}
}
