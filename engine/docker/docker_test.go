package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// fakeHost is the address the Docker backends of these tests report.
const fakeHost = "unix:///fake/docker.sock"

// A logBuffer collects the text of log records, safely for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newTestDocker connects a Docker backend to f; its log goes to logs.
func newTestDocker(t *testing.T, f *fakeDocker, logs io.Writer) *Docker {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := newDockerWithClient(context.Background(), f, dockerEndpoint{Host: fakeHost}, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// run starts spec on d, writes stdin to it, if any, and reads its output
// to the end.
func run(t *testing.T, d *Docker, spec engine.Spec, stdin string) (stdout, stderr string, st engine.ExitStatus, sb engine.Sandbox) {
	t.Helper()
	ctx := context.Background()
	sb, err := d.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	var errBuf bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(&errBuf, sb.Stderr())
		copied <- err
	}()
	// A program that reads no input may be gone before it is written.
	if stdin != "" {
		if _, err := io.WriteString(sb.Stdin(), stdin); err != nil {
			t.Fatalf("writing stdin: %v", err)
		}
		if err := sb.Stdin().Close(); err != nil {
			t.Fatalf("closing stdin: %v", err)
		}
	}
	out, err := io.ReadAll(sb.Stdout())
	if err != nil {
		t.Fatalf("reading stdout: %v", err)
	}
	if err := <-copied; err != nil {
		t.Fatalf("reading stderr: %v", err)
	}
	st, err = sb.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return string(out), errBuf.String(), st, sb
}

// indexOf returns the index of the first call that starts with prefix.
func indexOf(calls []string, prefix string) int {
	return slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

var pySpec = engine.Spec{Cmd: []string{"python3", "-u", "-"}, Session: "s1"}

func TestDockerStartAttachesBeforeStarting(t *testing.T) {
	f := newFakeDocker(t)
	f.program = func(_ context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
		// Output written at once is lost unless attached before start.
		fmt.Fprintln(stdout, "early")
		fmt.Fprintln(stderr, "warning")
		io.Copy(stdout, stdin)
		return 0
	}
	d := newTestDocker(t, f, nil)
	stdout, stderr, st, sb := run(t, d, pySpec, "hello\n")
	if stdout != "early\nhello\n" || stderr != "warning\n" {
		t.Errorf("stdout %q, stderr %q; want early and the echo, and the warning", stdout, stderr)
	}
	if st != (engine.ExitStatus{Code: 0, MemoryLimit: defaults.MemoryBytes}) || st.Err() != nil {
		t.Errorf("status %+v", st)
	}
	id := sb.ID()
	calls := f.Calls()
	order := []string{"ImageInspect " + defaults.Image, "ContainerCreate mcp-sbx-s1-", "ContainerAttach " + id, "ContainerStart " + id, "ContainerWait " + id, "ContainerInspect " + id}
	for i := 1; i < len(order); i++ {
		if a, b := indexOf(calls, order[i-1]), indexOf(calls, order[i]); a < 0 || b < 0 || a > b {
			t.Fatalf("calls %q: want %q before %q", calls, order[i-1], order[i])
		}
	}
	f.mu.Lock()
	c := f.containers[id]
	f.mu.Unlock()
	if c.cfg.Cmd[0] != "python3" || c.cfg.Labels[engine.LabelSession] != "s1" || c.host.NetworkMode != "none" || !c.host.ReadonlyRootfs {
		t.Errorf("container not created from dockerConfig: %+v %+v", c.cfg, c.host)
	}
	if err := sb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := f.containers[id]; ok {
		t.Fatal("container not removed by Close")
	}
	n := len(f.Calls())
	if err := sb.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := f.Calls(); len(got) != n {
		t.Fatalf("second Close called the engine: %q", got[n:])
	}
}

func TestDockerStartTracesPhases(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	var phases []string
	ctx := engine.WithStartTrace(context.Background(), &engine.StartTrace{Phase: func(name string, _ time.Duration) {
		phases = append(phases, name)
	}})
	sb, err := d.Start(ctx, pySpec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if want := []string{engine.PhaseImage, engine.PhaseCreate, engine.PhaseAttach, engine.PhaseStart}; !slices.Equal(phases, want) {
		t.Fatalf("phases %q, want %q", phases, want)
	}
}

func TestDockerStdcopyDemultiplexes(t *testing.T) {
	f := newFakeDocker(t)
	// More than the streams' buffers hold, interleaved: the copier must
	// block on a full buffer, not lose or mix bytes.
	const lines = 20000
	f.program = func(_ context.Context, _ io.Reader, stdout, stderr io.Writer) int {
		// Frames of 50 lines, alternating between the streams.
		var out, errs bytes.Buffer
		for i := range lines {
			fmt.Fprintf(&out, "out %d %s\n", i, strings.Repeat("o", 20))
			if i%10 == 0 {
				fmt.Fprintf(&errs, "err %d\n", i)
			}
			if i%50 == 49 || i == lines-1 {
				stdout.Write(out.Bytes())
				stderr.Write(errs.Bytes())
				out.Reset()
				errs.Reset()
			}
		}
		return 3
	}
	d := newTestDocker(t, f, nil)
	stdout, stderr, st, _ := run(t, d, pySpec, "")
	var wantOut, wantErr strings.Builder
	for i := range lines {
		fmt.Fprintf(&wantOut, "out %d %s\n", i, strings.Repeat("o", 20))
		if i%10 == 0 {
			fmt.Fprintf(&wantErr, "err %d\n", i)
		}
	}
	if len(stdout) <= lifecycle.StreamBufferBytes {
		t.Fatalf("test writes %d bytes, no more than a buffer holds", len(stdout))
	}
	if stdout != wantOut.String() || stderr != wantErr.String() {
		t.Fatalf("streams mixed or lost: stdout %d bytes (want %d), stderr %d bytes (want %d)",
			len(stdout), wantOut.Len(), len(stderr), wantErr.Len())
	}
	if st.Code != 3 {
		t.Fatalf("code %d, want 3", st.Code)
	}
}

func TestDockerExitStatus(t *testing.T) {
	for _, tt := range []struct {
		name       string
		code       int
		oomKilled  bool
		oomLate    int
		stateError string
		waitError  string
		failInsp   bool
		want       engine.ExitStatus
	}{
		{name: "clean", code: 0, want: engine.ExitStatus{MemoryLimit: 64 << 20}},
		{name: "OOM-killed", code: 137, oomKilled: true, want: engine.ExitStatus{Code: 137, OOMKilled: true, MemoryLimit: 64 << 20}},
		{name: "OOM kill recorded after the exit", code: 137, oomKilled: true, oomLate: 3, want: engine.ExitStatus{Code: 137, OOMKilled: true, MemoryLimit: 64 << 20}},
		{name: "SIGKILL, no OOM kill", code: 137, want: engine.ExitStatus{Code: 137, MemoryLimit: 64 << 20}},
		{name: "wait error", code: 1, waitError: "oci failed", want: engine.ExitStatus{Code: 1, EngineError: "oci failed", MemoryLimit: 64 << 20}},
		{name: "state error wins", code: 1, waitError: "oci failed", stateError: "runc: exec failed",
			want: engine.ExitStatus{Code: 1, EngineError: "runc: exec failed", MemoryLimit: 64 << 20}},
		{name: "inspect fails", code: 137, oomKilled: true, failInsp: true, want: engine.ExitStatus{Code: 137, MemoryLimit: 64 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDocker(t)
			f.program = func(context.Context, io.Reader, io.Writer, io.Writer) int { return tt.code }
			f.oomKilled, f.oomLate, f.stateError, f.waitError = tt.oomKilled, tt.oomLate, tt.stateError, tt.waitError
			if tt.failInsp {
				f.fail = func(method, _ string) error {
					if method == "ContainerInspect" {
						return errors.New("daemon busy")
					}
					return nil
				}
			}
			d := newTestDocker(t, f, nil)
			spec := pySpec
			spec.MemoryBytes = 64 << 20
			_, _, st, _ := run(t, d, spec, "")
			if st != tt.want {
				t.Fatalf("status %+v, want %+v", st, tt.want)
			}
		})
	}
}

func TestDockerWaitFails(t *testing.T) {
	f := newFakeDocker(t)
	f.fail = func(method, _ string) error {
		if method == "ContainerWait" {
			return errors.New("connection reset")
		}
		return nil
	}
	d := newTestDocker(t, f, nil)
	sb := mustStart(t, d)
	if _, err := sb.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "waiting for container") {
		t.Fatalf("Wait: %v, want the wait's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Done: the status is there, whatever ctx says; not done: ctx's error.
	if _, err := sb.Wait(ctx); err == nil {
		t.Fatal("Wait after a failed wait returned no error")
	}
}

func TestDockerWaitHonoursContext(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	sb := mustStart(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := sb.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a running container: %v, want the context's error", err)
	}
}

func TestDockerStartFailures(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		method  string
		want    string
		removed bool // the created container is removed again
	}{
		{method: "ContainerCreate", want: "creating container: boom"},
		{method: "ContainerAttach", want: "attaching to container 000000000000: boom", removed: true},
		{method: "ContainerStart", want: "starting container 000000000000: boom", removed: true},
	} {
		t.Run(tt.method, func(t *testing.T) {
			f := newFakeDocker(t)
			f.fail = func(method, _ string) error {
				if method == tt.method {
					return boom
				}
				return nil
			}
			d := newTestDocker(t, f, nil)
			sb, err := d.Start(context.Background(), pySpec)
			if err == nil || sb != nil {
				t.Fatalf("Start = %v, %v; want an error", sb, err)
			}
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), tt.want) || errors.Is(err, engine.ErrNoEngine) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			calls := f.Calls()
			if got := indexOf(calls, "ContainerRemove") >= 0; got != tt.removed {
				t.Fatalf("calls %q: container removed %v, want %v", calls, got, tt.removed)
			}
			if len(f.containers) != 0 {
				t.Fatalf("containers left: %v", f.containers)
			}
		})
	}
}

func TestDockerSpecWithoutCommand(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	n := len(f.Calls())
	if _, err := d.Start(context.Background(), engine.Spec{}); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Fatalf("Start without a command: %v", err)
	}
	if calls := f.Calls(); len(calls) != n {
		t.Fatalf("Start without a command called the engine: %q", calls[n:])
	}
}

// connectionFailed returns the error of a Docker client whose daemon is
// not there.
func connectionFailed(t *testing.T) error {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost("unix://" + filepath.Join(t.TempDir(), "docker.sock")))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = cli.ContainerList(context.Background(), container.ListOptions{})
	if !client.IsErrConnectionFailed(err) {
		t.Fatalf("the client's error for a missing daemon is %v, not a connection failure", err)
	}
	return err
}

func TestDockerNoEngine(t *testing.T) {
	down := connectionFailed(t)
	for _, method := range []string{"ImageInspect", "ContainerCreate", "ContainerAttach", "ContainerStart"} {
		t.Run(method, func(t *testing.T) {
			f := newFakeDocker(t)
			f.fail = func(m, _ string) error {
				if m == method {
					return down
				}
				return nil
			}
			d := newTestDocker(t, f, nil)
			_, err := d.Start(context.Background(), pySpec)
			if !errors.Is(err, engine.ErrNoEngine) || !strings.Contains(err.Error(), "docker at "+fakeHost) {
				t.Fatalf("err = %v, want ErrNoEngine naming the host", err)
			}
		})
	}
}

func TestNewDockerUnreachable(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "docker.sock")
	if _, err := New(context.Background(), &Options{Host: sock}); err == nil || !strings.Contains(err.Error(), "docker at "+sock) {
		t.Fatalf("New without a daemon: %v", err)
	}
	t.Setenv("DOCKER_HOST", sock)
	if _, err := New(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "docker at "+sock) {
		t.Fatalf("New with DOCKER_HOST and no daemon: %v", err)
	}
	if _, err := New(context.Background(), &Options{Host: "ssh://"}); err == nil || !strings.Contains(err.Error(), "setting up ssh connection") {
		t.Fatalf("New with a bad ssh address: %v", err)
	}
}

func TestNewDockerPingFails(t *testing.T) {
	f := newFakeDocker(t)
	down := connectionFailed(t)
	f.fail = func(method, _ string) error {
		if method == "Ping" {
			return down
		}
		return nil
	}
	_, err := newDockerWithClient(context.Background(), f, dockerEndpoint{Host: fakeHost}, &Options{})
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "docker at "+fakeHost) {
		t.Fatalf("err = %v", err)
	}
	if f.closed != 1 {
		t.Fatalf("client closed %d times after the failed ping, want 1", f.closed)
	}
}

// TestDockerLeftoversRetried fails a sandbox's removal and checks the
// container is removed at the next Start, or at Close.
func TestDockerLeftoversRetried(t *testing.T) {
	restarting := errors.New("daemon restarting")
	for _, at := range []string{"Start", "Close"} {
		t.Run(at, func(t *testing.T) {
			f := newFakeDocker(t)
			failRemove := true
			f.fail = func(method, _ string) error {
				if method == "ContainerRemove" && failRemove {
					return restarting
				}
				return nil
			}
			d := newTestDocker(t, f, nil)
			sb := mustStart(t, d)
			id := sb.ID()
			if err := sb.Close(); !errors.Is(err, restarting) || !strings.Contains(err.Error(), "removing container") {
				t.Fatalf("Close = %v, want the removal's error", err)
			}
			if d.e.Leftovers() != 1 {
				t.Fatalf("%d leftovers, want 1", d.e.Leftovers())
			}
			// Still failing: kept for later.
			if at == "Start" {
				if _, err := d.Start(context.Background(), engine.Spec{}); err == nil {
					t.Fatal("Start without a command succeeded")
				}
				sb2, err := d.Start(context.Background(), pySpec)
				if err != nil {
					t.Fatal(err)
				}
				defer sb2.Close()
			}
			if d.e.Leftovers() != 1 {
				t.Fatalf("%d leftovers after a failed retry, want 1", d.e.Leftovers())
			}
			f.mu.Lock()
			failRemove = false
			f.mu.Unlock()
			n := len(f.Calls())
			switch at {
			case "Start":
				sb3, err := d.Start(context.Background(), pySpec)
				if err != nil {
					t.Fatal(err)
				}
				defer sb3.Close()
			case "Close":
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				if f.closed != 1 {
					t.Fatalf("client closed %d times, want 1", f.closed)
				}
			}
			// The earlier sandbox's watcher may call ContainerWait at any
			// time: only this Start's or Close's own calls are in order.
			calls := slices.DeleteFunc(slices.Clone(f.Calls()[n:]), func(c string) bool { return strings.HasPrefix(c, "ContainerWait ") })
			if len(calls) == 0 || calls[0] != "ContainerRemove "+id {
				t.Fatalf("calls %q: want the leftover removed first", calls)
			}
			if d.e.Leftovers() != 0 {
				t.Fatalf("%d leftovers after a successful retry, want 0", d.e.Leftovers())
			}
		})
	}
}

func TestDockerCloseWithoutLeftovers(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); calls[len(calls)-1] != "Close" || indexOf(calls, "ContainerRemove") >= 0 {
		t.Fatalf("calls %q: want only the client closed", calls)
	}
	if d.Name() != "docker" {
		t.Fatalf("Name() = %q", d.Name())
	}
}

// TestDockerCloseAfterCancel cancels the context a sandbox was started
// with: Close must still stop and remove it (the fake fails calls made
// with a cancelled context), wait for its goroutines, and be idempotent
// under concurrent calls.
func TestDockerCloseAfterCancel(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	sb, err := d.Start(ctx, pySpec)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	reading := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(sb.Stdout())
		reading <- err
	}()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = sb.Close() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Close after the start context was cancelled: %v", err)
		}
	}
	calls := f.Calls()
	if indexOf(calls, "ContainerStop") < 0 || indexOf(calls, "ContainerRemove") < 0 {
		t.Fatalf("calls %q: want the container stopped and removed", calls)
	}
	stops := 0
	for _, c := range calls {
		if strings.HasPrefix(c, "ContainerStop") {
			stops++
		}
	}
	if stops != 1 {
		t.Fatalf("%d stops for 3 Close calls, want 1", stops)
	}
	if n := sb.(*lifecycle.Sandbox).Running(); n != 0 {
		t.Fatalf("%d goroutines of the sandbox still run after Close", n)
	}
	// A reader blocked across Close returns: at EOF, or with the error
	// that ended the stream (the connection Close closed) or the pipe.
	select {
	case err := <-reading:
		t.Logf("reading stdout across Close: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a read of stdout still blocks after Close")
	}
	if _, err := sb.Stdin().Write([]byte("x")); err == nil {
		t.Fatal("write to stdin after Close succeeded")
	}
	if _, err := sb.Wait(context.Background()); err != nil {
		t.Logf("Wait after Close: %v", err)
	}
}

func TestDockerStopAndGrace(t *testing.T) {
	for _, tt := range []struct {
		grace time.Duration
		want  int
	}{
		{0, 2}, {1500 * time.Millisecond, 2}, {5 * time.Second, 5},
	} {
		f := newFakeDocker(t)
		d, err := newDockerWithClient(context.Background(), f, dockerEndpoint{Host: fakeHost}, &Options{StopGrace: tt.grace})
		if err != nil {
			t.Fatal(err)
		}
		sb := mustStart(t, d)
		if err := sb.Close(); err != nil {
			t.Fatal(err)
		}
		if len(f.stopOpts) != 1 || f.stopOpts[0].Timeout == nil || *f.stopOpts[0].Timeout != tt.want {
			t.Errorf("grace %v: stop options %+v, want a timeout of %d s", tt.grace, f.stopOpts, tt.want)
		}
	}
}

func TestDockerStopFailures(t *testing.T) {
	f := newFakeDocker(t)
	refused := errors.New("refused")
	f.fail = func(method, _ string) error {
		if method == "ContainerStop" {
			return refused
		}
		return nil
	}
	d := newTestDocker(t, f, nil)
	sb := mustStart(t, d)
	if err := sb.Close(); !errors.Is(err, refused) || !strings.Contains(err.Error(), "stopping container") {
		t.Fatalf("Close = %v, want the stop's error", err)
	}
	if len(f.containers) != 0 {
		t.Fatal("container not removed after a failed stop")
	}
	// A container already gone is stopped and removed without error.
	f.fail = nil
	sb = mustStart(t, d)
	f.mu.Lock()
	delete(f.containers, sb.ID())
	f.mu.Unlock()
	if err := sb.Close(); err != nil {
		t.Fatalf("Close of a container already gone: %v", err)
	}
}

func TestDockerSignal(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	sb := mustStart(t, d)
	sig := sb.(interface {
		Signal(context.Context, syscall.Signal) error
	})
	if err := sig.Signal(context.Background(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if indexOf(f.Calls(), "ContainerKill "+sb.ID()+" SIGINT") < 0 {
		t.Fatalf("calls %q: want SIGINT sent", f.Calls())
	}
	f.mu.Lock()
	delete(f.containers, sb.ID())
	f.mu.Unlock()
	if err := sig.Signal(context.Background(), syscall.SIGINT); err == nil || !strings.Contains(err.Error(), "signalling container") {
		t.Fatalf("Signal to a container gone: %v", err)
	}
}

func TestDockerImage(t *testing.T) {
	const ref = "localhost/py:1"
	progress := `{"status":"Pulling from py","id":"1"}
{"status":"Downloading","id":"a"}
{"status":"Downloading","id":"a"}
{"status":"Downloading","id":"b"}
{"status":"Pull complete","id":"a"}
`
	for _, tt := range []struct {
		name      string
		present   bool
		pull      string
		fail      map[string]error
		want      string // in the error; "" for success
		wantImage bool   // the error is ErrImage
		pulled    bool   // a pull was tried
	}{
		{name: "present", present: true},
		{name: "pulled", pull: progress, pulled: true},
		{name: "pull fails", fail: map[string]error{"ImagePull": errors.New("denied")}, want: "denied", wantImage: true, pulled: true},
		{name: "pull reports an error", pull: progress + `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}`,
			want: "manifest unknown", wantImage: true, pulled: true},
		{name: "pull progress unreadable", pull: `{"status":`, want: "reading pull progress", wantImage: true, pulled: true},
		{name: "inspect fails", fail: map[string]error{"ImageInspect": errors.New("daemon busy")}, want: `inspecting image "localhost/py:1": daemon busy`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDocker(t)
			f.images[ref] = tt.present
			f.pull = tt.pull
			f.fail = func(method, _ string) error { return tt.fail[method] }
			var logs logBuffer
			d := newTestDocker(t, f, &logs)
			spec := pySpec
			spec.Image = ref
			sb, err := d.Start(context.Background(), spec)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				sb.Close()
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, engine.ErrImage) != tt.wantImage {
					t.Fatalf("err = %v, want %q (ErrImage: %v)", err, tt.want, tt.wantImage)
				}
				if tt.wantImage && (!strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "MCP_BRIDGE_IMAGE")) {
					t.Fatalf("err = %v, want the image and the setting named", err)
				}
				if indexOf(f.Calls(), "ContainerCreate") >= 0 {
					t.Fatal("container created without its image")
				}
			}
			if got := indexOf(f.Calls(), "ImagePull") >= 0; got != tt.pulled {
				t.Fatalf("pulled %v, want %v", got, tt.pulled)
			}
			if tt.pulled && tt.want == "" {
				if n := strings.Count(logs.String(), "msg=\"pull progress\""); n != 4 {
					t.Fatalf("%d progress records, want one per layer and status (4):\n%s", n, logs.String())
				}
			}
			if tt.want != "" {
				return
			}
			// Known present now: not looked up again.
			n := len(f.Calls())
			sb, err = d.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			sb.Close()
			if indexOf(f.Calls()[n:], "ImageInspect") >= 0 {
				t.Fatal("image looked up again")
			}
		})
	}
}

func TestDockerRemovesOrphansAtConnect(t *testing.T) {
	me := lifecycle.CurrentOwner()
	dead := strconv.Itoa(1<<22 + 7) // above pid_max: never a live process
	labels := func(host, pid, start string) map[string]string {
		return map[string]string{engine.LabelBridge: "1", engine.LabelHost: host, engine.LabelPID: pid, engine.LabelPIDStart: start}
	}
	f := newFakeDocker(t)
	f.list = []container.Summary{
		{ID: "orphan1", Labels: labels(me.Host, dead, "1"), State: "running"},
		{ID: "orphan2", Labels: labels(me.Host, dead, ""), State: "exited"},
		{ID: "mine", Labels: labels(me.Host, strconv.Itoa(me.PID), me.Start), State: "running"},
		{ID: "elsewhere", Labels: labels("another-host", dead, "1"), State: "running"},
	}
	var logs logBuffer
	f.fail = func(method, id string) error {
		if method == "ContainerRemove" && id == "orphan2" {
			return errors.New("busy")
		}
		return nil
	}
	d := newTestDocker(t, f, &logs)
	removed := []string{}
	for _, c := range f.Calls() {
		if id, ok := strings.CutPrefix(c, "ContainerRemove "); ok {
			removed = append(removed, id)
		}
	}
	if !slices.Equal(removed, []string{"orphan1", "orphan2"}) {
		t.Fatalf("removed %v, want the dead process's containers", removed)
	}
	if !strings.Contains(logs.String(), "removing orphaned container") || !strings.Contains(logs.String(), "count=1") {
		t.Fatalf("log does not report the removal and its failure:\n%s", logs.String())
	}
	list, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 || list[2].ID != "mine" || list[2].State != "running" || list[2].Labels[engine.LabelPID] != strconv.Itoa(me.PID) {
		t.Fatalf("List = %+v", list)
	}
	if got := f.listOpts[0].Filters.Get("label"); !f.listOpts[0].All || !slices.Equal(got, []string{engine.LabelBridge + "=1"}) {
		t.Fatalf("list options %+v: want all containers with the bridge's label", f.listOpts[0])
	}
}

func TestDockerListFails(t *testing.T) {
	f := newFakeDocker(t)
	f.fail = func(method, _ string) error {
		if method == "ContainerList" {
			return errors.New("busy")
		}
		return nil
	}
	var logs logBuffer
	d := newTestDocker(t, f, &logs)
	if !strings.Contains(logs.String(), "orphan clean-up") {
		t.Fatalf("a failed orphan clean-up is not logged:\n%s", logs.String())
	}
	if _, err := d.List(context.Background()); err == nil || !strings.Contains(err.Error(), "listing containers: busy") {
		t.Fatalf("List: %v", err)
	}
}

// mustStart starts a sandbox of pySpec on d, failing the test if it
// cannot; the sandbox is closed when the test ends (Close is idempotent).
func mustStart(t *testing.T, d *Docker) engine.Sandbox {
	t.Helper()
	sb, err := d.Start(context.Background(), pySpec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}
