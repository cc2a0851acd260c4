package entrypoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

func newLocal(t *testing.T, opts Options) *Session {
	t.Helper()
	return newOn(t, enginetest.Local{T: t}, opts)
}

// newOn returns a session on eng, closed when the test ends.
func newOn(t *testing.T, eng engine.Engine, opts Options) *Session {
	t.Helper()
	s := New(eng, &opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func exec1(t *testing.T, s *Session, code string, timeout time.Duration) *Result {
	t.Helper()
	res, err := s.Execute(context.Background(), code, timeout)
	if err != nil {
		t.Fatalf("Execute(%q): %v", code, err)
	}
	return res
}

func want(t *testing.T, res *Result, status Status, stdout string) {
	t.Helper()
	if res.Status != status || res.Stdout != stdout {
		t.Fatalf("got status %q stdout %q (stderr %q, exc %s: %s, notice %q); want %q, %q",
			res.Status, res.Stdout, res.Stderr, res.ExceptionType, res.ExceptionMessage, res.Notice, status, stdout)
	}
}

func TestStatePersists(t *testing.T) {
	s := newLocal(t, Options{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.python(), "3.") {
		t.Fatalf("python() = %q", s.python())
	}
	exec1(t, s, "import math\nx = 40\ndef f(v): return v + 2\nclass C:\n    k = 'kept'\n", 0)
	want(t, exec1(t, s, "print(f(x), math.pi > 3, C.k)", 0), StatusSuccess, "42 True kept\n")
}

func TestTopLevelAwaitAndPersistentLoop(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "import asyncio\nq = asyncio.Queue()\nawait q.put('from call one')\nfut = asyncio.get_running_loop().create_future()", 0)
	want(t, exec1(t, s, "fut.set_result(7)\nprint(await q.get(), await fut)", 0), StatusSuccess, "from call one 7\n")
}

func TestExceptionKeepsSession(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "y = 5", 0)
	res := exec1(t, s, "print('before')\ndef g():\n    return 1/0\ng()", 0)
	want(t, res, StatusError, "before\n")
	if res.ExceptionType != "ZeroDivisionError" || !strings.Contains(res.Traceback, "line 3, in g") ||
		strings.Contains(res.Traceback, "runtime.py") || strings.Contains(res.Traceback, "<mcp-") {
		t.Fatalf("exception %q, traceback:\n%s", res.ExceptionType, res.Traceback)
	}
	res = exec1(t, s, "def broken(:\n", 0)
	if res.Status != StatusError || res.ExceptionType != "SyntaxError" {
		t.Fatalf("syntax error: %+v", res)
	}
	want(t, exec1(t, s, "print(y)", 0), StatusSuccess, "5\n")
}

func TestSystemExitEndsCallNotSession(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "z = 'alive'", 0)
	res := exec1(t, s, "import sys\nprint('bye')\nsys.exit(3)", 0)
	if res.Status != StatusExit || res.ExitCode != 3 || res.Stdout != "bye\n" {
		t.Fatalf("%+v", res)
	}
	want(t, exec1(t, s, "print(z)", 0), StatusSuccess, "alive\n")
}

func TestTimeoutInterruptsAndKeepsState(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "kept = [1, 2, 3]", 0)
	start := time.Now()
	res := exec1(t, s, "print('spinning')\nwhile True: pass", 300*time.Millisecond)
	if res.Status != StatusTimeout || res.StateLost || res.ExceptionType != "KeyboardInterrupt" || res.Stdout != "spinning\n" {
		t.Fatalf("%+v", res)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("interrupt took %v", d)
	}
	res = exec1(t, s, "import time\ntime.sleep(60)", 200*time.Millisecond)
	if res.Status != StatusTimeout || res.StateLost {
		t.Fatalf("sleep interrupted: %+v", res)
	}
	want(t, exec1(t, s, "print(sum(kept))", 0), StatusSuccess, "6\n")
}

func TestIgnoredInterruptKillsAndReplaces(t *testing.T) {
	s := newLocal(t, Options{InterruptGrace: 300 * time.Millisecond})
	exec1(t, s, "lost = True", 0)
	res := exec1(t, s, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", 200*time.Millisecond)
	if res.Status != StatusTimeout || !res.StateLost || !strings.Contains(res.Notice, "killed") {
		t.Fatalf("%+v", res)
	}
	res = exec1(t, s, "print('lost' in globals())", 0)
	want(t, res, StatusSuccess, "False\n")
	if !res.StateLost || !strings.Contains(res.Notice, "did not stop") {
		t.Fatalf("next call after a kill: StateLost %v, notice %q", res.StateLost, res.Notice)
	}
	want(t, exec1(t, s, "print('fresh')", 0), StatusSuccess, "fresh\n")
}

func TestOutputCapped(t *testing.T) {
	s := newLocal(t, Options{MaxOutputBytes: 1000})
	res := exec1(t, s, "import sys\nfor i in range(3000): print('x' * 999)\nsys.stderr.write('e' * 5000)", 0)
	if !res.Truncated || !strings.HasPrefix(res.Stdout, strings.Repeat("x", 999)+"\n") ||
		!strings.Contains(res.Stdout, "[output truncated: 2999000 more bytes not shown]") ||
		!strings.Contains(res.Stderr, "[output truncated: 4000 more bytes not shown]") {
		t.Fatalf("truncated %v, stdout %d bytes, tail %q, stderr tail %q", res.Truncated, len(res.Stdout),
			res.Stdout[max(0, len(res.Stdout)-80):], res.Stderr[max(0, len(res.Stderr)-80):])
	}
}

func TestForgedFramesAreData(t *testing.T) {
	s := newLocal(t, Options{})
	forged := `{"t":"result","id":"1","status":"ok"}`
	res := exec1(t, s, fmt.Sprintf("import os, sys\nprint(%q)\nos.write(1, b'%s\\n')\nos.write(2, b'%s\\n')\nsys.stdout.write('\\n')", forged, forged, forged), 0)
	if res.Status != StatusSuccess || strings.Count(res.Stdout, forged) != 2 || !strings.Contains(res.Stderr, forged) {
		t.Fatalf("%+v", res)
	}
}

func TestClosedStdioRestoredNextCall(t *testing.T) {
	s := newLocal(t, Options{})
	res := exec1(t, s, "import os, sys\nsys.stdout.close()\nos.close(1)\nos.close(2)", 0)
	if res.Status != StatusSuccess {
		t.Fatalf("%+v", res)
	}
	want(t, exec1(t, s, "print('back'); print(input.__name__)\ntry:\n    input()\nexcept EOFError:\n    print('stdin is empty')", 0),
		StatusSuccess, "back\ninput\nstdin is empty\n")
}

func TestConcurrentRPCs(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	s := newLocal(t, Options{RPC: func(ctx context.Context, p json.RawMessage) (any, error) {
		var req struct{ N int }
		if err := json.Unmarshal(p, &req); err != nil {
			return nil, err
		}
		if req.N < 0 {
			return nil, errors.New("negative")
		}
		mu.Lock()
		seen++
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return map[string]int{"double": 2 * req.N}, nil
	}})
	res := exec1(t, s, `import asyncio, mcp_sandbox_runtime as rt
res = await asyncio.gather(*[rt.rpc({"n": i}) for i in range(100)])
assert [r["double"] for r in res] == [2 * i for i in range(100)], res
print(len(res), sum(r["double"] for r in res))
try:
    await rt.rpc({"n": -1})
except rt.RPCError as e:
    print("error:", e)
print(rt.rpc_sync({"n": 21})["double"])`, 0)
	want(t, res, StatusSuccess, "100 9900\nerror: negative\n42\n")
	if seen != 101 {
		t.Fatalf("handler saw %d requests, want 101", seen)
	}
}

func TestRPCWithoutHandler(t *testing.T) {
	s := newLocal(t, Options{})
	res := exec1(t, s, "import mcp_sandbox_runtime as rt\ntry:\n    await rt.rpc({})\nexcept rt.RPCError as e:\n    print(e)", 0)
	want(t, res, StatusSuccess, "this sandbox has no RPC handler\n")
}

func TestCallsSerialized(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "log = []", 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Execute(context.Background(), fmt.Sprintf("import time\nlog.append(('start', %d))\ntime.sleep(0.01)\nlog.append(('end', %d))", i, i), 0)
			if err == nil && res.Status != StatusSuccess {
				err = fmt.Errorf("call %d: %+v", i, res)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want(t, exec1(t, s, "print(len(log), all(log[i][1] == log[i+1][1] and log[i][0] == 'start' for i in range(0, len(log), 2)))", 0),
		StatusSuccess, "16 True\n")
}

func TestDeadSandboxReplacedWithNotice(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "v = 1", 0)
	res, err := s.Execute(context.Background(), "import os, signal\nprint('dying', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)", 0)
	if !errors.Is(err, ErrSandboxDied) || !strings.Contains(err.Error(), "SIGKILL") {
		t.Fatalf("err = %v, want ErrSandboxDied naming SIGKILL", err)
	}
	if res == nil || res.Status != StatusError || !res.StateLost {
		t.Fatalf("result %+v", res)
	}
	res = exec1(t, s, "print('v' in globals())", 0)
	want(t, res, StatusSuccess, "False\n")
	if !res.StateLost || !strings.Contains(res.Notice, "SIGKILL") {
		t.Fatalf("notice %q", res.Notice)
	}
}

// TestDeathBeforeCodeBeganRunsOnFreshSandbox kills the sandbox after it
// received a call's code but before the code began, as a kill of its init
// that gVisor delivers late does: the call runs once, on a fresh sandbox,
// with a notice; code that began before the sandbox died is not run again.
func TestDeathBeforeCodeBeganRunsOnFreshSandbox(t *testing.T) {
	s := newLocal(t, Options{})
	ran := t.TempDir() + "/ran"
	// The next exec kills the runtime before it compiles the code.
	exec1(t, s, `import gc, os, signal
ex = [o for o in gc.get_objects() if type(o).__name__ == "Executor" and hasattr(o, "chan")][0]
ex.execute = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
v = 1`, 0)
	res := exec1(t, s, fmt.Sprintf("open(%q, 'a').write('x')\nprint('v' in globals())", ran), 0)
	want(t, res, StatusSuccess, "False\n")
	if !res.StateLost || !strings.Contains(res.Notice, "SIGKILL") {
		t.Fatalf("notice %q, want the death that lost the state", res.Notice)
	}
	if data, err := os.ReadFile(ran); err != nil || string(data) != "x" {
		t.Fatalf("the code ran %q times (%v), want once", data, err)
	}

	// Code that began is not run again: the death is the call's error.
	res, err := s.Execute(context.Background(), fmt.Sprintf("open(%q, 'a').write('y')\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)", ran), 0)
	if !errors.Is(err, ErrSandboxDied) || res == nil || !res.StateLost {
		t.Fatalf("a sandbox that died in the code: %+v, %v", res, err)
	}
	if data, _ := os.ReadFile(ran); string(data) != "xy" {
		t.Fatalf("the file holds %q, want xy: code that began ran again", data)
	}
}

func TestIdleTimeoutStopsSandbox(t *testing.T) {
	s := newLocal(t, Options{IdleTimeout: 150 * time.Millisecond})
	exec1(t, s, "w = 1", 0)
	time.Sleep(500 * time.Millisecond)
	s.mu.Lock()
	stopped := s.ctr == nil
	s.mu.Unlock()
	if !stopped {
		t.Fatal("sandbox still running after the idle timeout")
	}
	res := exec1(t, s, "print('w' in globals())", 0)
	want(t, res, StatusSuccess, "False\n")
	if !res.StateLost || !strings.Contains(res.Notice, "without calls") {
		t.Fatalf("notice %q", res.Notice)
	}
}

func TestClosedSession(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "pass", 0)
	s.Close()
	if _, err := s.Execute(context.Background(), "pass", 0); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelledCallerInterruptsCall(t *testing.T) {
	s := newLocal(t, Options{})
	exec1(t, s, "still = 'here'", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Execute(ctx, "while True: pass", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	want(t, exec1(t, s, "print(still)", 0), StatusSuccess, "here\n")
}

func TestMisbehavingSandbox(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"garbage instead of ready", `print("hello, I am not a frame", flush=True); import time; time.sleep(5)`, "malformed frame"},
		{"wrong protocol", `print('{"t":"ready","protocol":99}', flush=True); import time; time.sleep(5)`, "protocol 99"},
		{"exits at once", `import sys; sys.stderr.write("boom\n"); sys.exit(4)`, "exited with code 4"},
		{"huge line", `import sys; sys.stdout.write("x" * (17 << 20)); sys.stdout.flush(); import time; time.sleep(5)`, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOn(t, enginetest.Local{T: t, Args: []string{"python3", "-c", tt.script}}, Options{ReadyTimeout: 15 * time.Second})
			_, err := s.Execute(context.Background(), "pass", 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestInitRunsInEveryNewInterpreter(t *testing.T) {
	n := 0
	s := newLocal(t, Options{Init: func() string { n++; return fmt.Sprintf("helper = lambda: 'init %d'", n) }, InterruptGrace: 200 * time.Millisecond})
	want(t, exec1(t, s, "print(helper())", 0), StatusSuccess, "init 1\n")
	exec1(t, s, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", 100*time.Millisecond)
	want(t, exec1(t, s, "print(helper())", 0), StatusSuccess, "init 2\n")

	bad := newLocal(t, Options{Init: func() string { return "raise RuntimeError('broken helpers')" }})
	if _, err := bad.Execute(context.Background(), "pass", 0); err == nil || !strings.Contains(err.Error(), "broken helpers") {
		t.Fatalf("err = %v", err)
	}
}

// TestStartTraceReportsPhases checks that a new session reports where its
// start went: the runtime's phases split by the sandbox's clock, then Init.
func TestStartTraceReportsPhases(t *testing.T) {
	s := newLocal(t, Options{Init: func() string { return "x = 1" }})
	var phases []string
	var sum time.Duration
	ctx := engine.WithStartTrace(context.Background(), &engine.StartTrace{Phase: func(name string, took time.Duration) {
		if took < 0 {
			t.Errorf("phase %s took %v", name, took)
		}
		phases = append(phases, name)
		sum += took
	}})
	began := time.Now()
	if res, err := s.Execute(ctx, "print(x)", 10*time.Second); err != nil || res.Stdout != "1\n" {
		t.Fatalf("first call: %+v %v", res, err)
	}
	total := time.Since(began)
	want := []string{PhaseInterpreter, PhaseRuntime, PhaseReady, PhaseInit}
	if !slices.Equal(phases, want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	if sum > total {
		t.Errorf("the phases add up to %v, more than the whole call's %v", sum, total)
	}
	phases = nil
	exec1(t, s, "pass", 10*time.Second)
	if res, _ := s.Execute(ctx, "pass", 10*time.Second); res == nil || len(phases) != 0 {
		t.Errorf("a warm call reported start phases %v", phases)
	}
}

func TestProgressReports(t *testing.T) {
	s := newLocal(t, Options{})
	var mu sync.Mutex
	var got []Progress
	call := &Call{
		Code: `import mcp_sandbox_runtime as rt, time
class Bad:
    def __str__(self): raise RuntimeError("no")
rt.report_progress("not a number")
rt.report_progress(float("nan"))
rt.report_progress(1, message=Bad())
rt.report_progress(0, 10, "starting")
time.sleep(0.12)
for i in range(10000):
    rt.report_progress(i + 1, 10000, "step %d" % (i + 1))
print("done")`,
		OnProgress: func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		},
	}
	res, err := s.Run(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	want(t, res, StatusSuccess, "done\n")
	mu.Lock()
	defer mu.Unlock()
	// Bad arguments are ignored, the first good report goes at once, a
	// loop of 10,000 is folded (at most one every 50 ms), and the last
	// report of the call always arrives.
	if len(got) < 2 || len(got) > 2+int(res.Duration/(50*time.Millisecond))+1 {
		t.Fatalf("%d reports in %v: %+v", len(got), res.Duration, got)
	}
	if first := got[0]; first != (Progress{Progress: 0, Total: 10, Message: "starting"}) {
		t.Errorf("first report %+v", first)
	}
	if last := got[len(got)-1]; last != (Progress{Progress: 10000, Total: 10000, Message: "step 10000"}) {
		t.Errorf("last report %+v", last)
	}
	// Without a listener, report_progress does nothing and costs little.
	res = exec1(t, s, "import mcp_sandbox_runtime as rt\nfor i in range(100000): rt.report_progress(i)\nprint('quiet')", 0)
	want(t, res, StatusSuccess, "quiet\n")
}

func TestInterruptRunsCleanup(t *testing.T) {
	s := newLocal(t, Options{InterruptGrace: 2 * time.Second})
	// The first interrupt is one KeyboardInterrupt: finally blocks and
	// context managers of the interrupted code run. (A bare busy loop
	// such as "while True: pass" is another matter: CPython 3.11 skips
	// the finally of its try for an interrupt raised in it, on the host
	// as well.)
	res := exec1(t, s, `import time
try:
    while True:
        time.sleep(0.01)
finally:
    print("cleanup ran")`, 300*time.Millisecond)
	if res.Status != StatusTimeout || res.StateLost || res.Stdout != "cleanup ran\n" {
		t.Fatalf("an interrupted call's finally blocks: %+v", res)
	}
	// Code that swallows the interrupt is interrupted again.
	res = exec1(t, s, "import time\nwhile True:\n    try:\n        while True: time.sleep(0.01)\n    except KeyboardInterrupt:\n        pass", 300*time.Millisecond)
	if res.Status != StatusTimeout || res.StateLost {
		t.Fatalf("code swallowing interrupts: %+v", res)
	}
}

// A placingEngine names, as auto.Multi does, the engine each sandbox
// runs on: "a" for the first, "b" for the next, ….
type placingEngine struct {
	engine.Engine
	n atomic.Int32
}

// A placedSandbox is a sandbox that names its engine.
type placedSandbox struct {
	engine.Sandbox
	engine string
}

func (s placedSandbox) Engine() string { return s.engine }

func (e *placingEngine) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	sb, err := e.Engine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return placedSandbox{sb, string(rune('a' + e.n.Add(1) - 1))}, nil
}

func TestNoticeNamesNewEngine(t *testing.T) {
	s := newOn(t, &placingEngine{Engine: enginetest.Local{T: t}}, Options{})
	res := exec1(t, s, "v = 1", 0)
	if res.Notice != "" {
		t.Fatalf("first call's notice %q", res.Notice)
	}
	s.Execute(context.Background(), "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 0)
	res = exec1(t, s, "print('v' in globals())", 0)
	want(t, res, StatusSuccess, "False\n")
	if !strings.Contains(res.Notice, "SIGKILL") ||
		!strings.Contains(res.Notice, "the new sandbox runs on engine b (the previous one ran on a)") {
		t.Fatalf("notice %q, want the reason and both engines", res.Notice)
	}
}

// TestPrepareAddsSiteDirs: Prepare may amend the spec of each sandbox
// and name directories whose modules and .pth files the runtime takes
// before the first call; its error fails the start.
func TestPrepareAddsSiteDirs(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "extra"), 0o755)
	os.WriteFile(filepath.Join(dir, "mcp_prepared.py"), []byte("VALUE = 42\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "extra", "mcp_by_pth.py"), []byte("VALUE = 7\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "extra.pth"), []byte("extra\n"), 0o644)
	var specs []engine.Spec
	s := newLocal(t, Options{Prepare: func(_ context.Context, spec *engine.Spec) ([]string, error) {
		spec.Volumes = append(spec.Volumes, engine.VolumeMount{Name: "v", Target: engine.PackagesDir, ReadOnly: true})
		specs = append(specs, *spec)
		return []string{dir}, nil
	}})
	res := exec1(t, s, "import mcp_prepared, mcp_by_pth\nprint(mcp_prepared.VALUE, mcp_by_pth.VALUE)", 0)
	want(t, res, StatusSuccess, "42 7\n")
	if len(specs) != 1 || len(specs[0].Volumes) != 1 || specs[0].Volumes[0].Target != engine.PackagesDir {
		t.Fatalf("Prepare saw %+v", specs)
	}
	failing := newLocal(t, Options{Prepare: func(context.Context, *engine.Spec) ([]string, error) {
		return nil, errors.New("installing the package set (nosuchpkg): no matching distribution")
	}})
	if _, err := failing.Execute(context.Background(), "print(1)", 0); err == nil || !strings.Contains(err.Error(), "nosuchpkg") {
		t.Fatalf("a failing Prepare: %v", err)
	}
}
