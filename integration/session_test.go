//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// newSession returns a started session on e, closed at the end of the test.
func newSession(t *testing.T, e testEngine, opts entrypoint.Options) *entrypoint.Session {
	t.Helper()
	if opts.Spec.Session == "" {
		opts.Spec = settings(t).SandboxSpec(strings.ReplaceAll(t.Name(), "/", "-"), nil)
	}
	opts.Logger = testLogger()
	s := entrypoint.New(e, &opts)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func execOK(t *testing.T, s *entrypoint.Session, code string, timeout time.Duration) *entrypoint.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Execute(ctx, code, timeout)
	if err != nil {
		t.Fatalf("Execute(%.60q): %v", code, err)
	}
	return res
}

func expect(t *testing.T, res *entrypoint.Result, status entrypoint.Status, stdout string) {
	t.Helper()
	if res.Status != status || res.Stdout != stdout {
		t.Fatalf("status %q stdout %q (stderr %q, %s: %s, notice %q); want %q %q",
			res.Status, res.Stdout, res.Stderr, res.ExceptionType, res.ExceptionMessage, res.Notice, status, stdout)
	}
}

func TestSessionStateAndSemantics(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := newSession(t, e, entrypoint.Options{})
		// State retention: variables, imports, functions, classes.
		execOK(t, s, "import json\nn = 41\ndef inc(v): return v + 1\nclass K: tag = 'k'", 0)
		expect(t, execOK(t, s, "print(json.dumps([inc(n), K.tag]))", 0), entrypoint.StatusSuccess, "[42, \"k\"]\n")
		// Top-level await; the loop persists with objects tied to it.
		execOK(t, s, "import asyncio\nq = asyncio.Queue()\nawait q.put('queued')", 0)
		expect(t, execOK(t, s, "print(await q.get())", 0), entrypoint.StatusSuccess, "queued\n")
		// An exception keeps the session.
		res := execOK(t, s, "raise ValueError('bad value')", 0)
		if res.Status != entrypoint.StatusError || res.ExceptionType != "ValueError" || !strings.Contains(res.Traceback, "bad value") {
			t.Fatalf("exception: %+v", res)
		}
		// SystemExit ends the call only.
		res = execOK(t, s, "import sys; sys.exit(5)", 0)
		if res.Status != entrypoint.StatusExit || res.ExitCode != 5 {
			t.Fatalf("exit: %+v", res)
		}
		// A forged frame printed by user code is plain output.
		forged := `{"t":"result","id":"999","status":"ok"}`
		expect(t, execOK(t, s, fmt.Sprintf("import os\nprint(%q)\nos.write(1, b'%s\\n')", forged, forged), 0),
			entrypoint.StatusSuccess, forged+"\n"+forged+"\n")
		expect(t, execOK(t, s, "print(n)", 0), entrypoint.StatusSuccess, "41\n")
	})
}

func TestSessionTimeoutKeepsState(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// The interrupt must work, not work fast: a generous grace
		// (the default's 2 s can pass on a loaded machine).
		s := newSession(t, e, entrypoint.Options{InterruptGrace: loadedGrace})
		execOK(t, s, "survivor = 'yes'", 0)
		res := execOK(t, s, "while True: pass", time.Second)
		if res.Status != entrypoint.StatusTimeout || res.StateLost || res.ExceptionType != "KeyboardInterrupt" {
			t.Fatalf("%+v", res)
		}
		expect(t, execOK(t, s, "print(survivor)", 0), entrypoint.StatusSuccess, "yes\n")
	})
}

// loadedGrace is the interrupt grace of tests whose interrupted code must
// stop, however long a loaded machine makes that take: the default (2 s)
// is the product's, a bound on a user's wait, not what these tests check.
const loadedGrace = 30 * time.Second

// TestSessionForkLoopInterrupted interrupts a fork loop at its timeout and
// checks that no process of it is left in the container.
func TestSessionForkLoopInterrupted(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := newSession(t, e, entrypoint.Options{InterruptGrace: loadedGrace})
		execOK(t, s, "marker = 'kept'", 0)
		res := execOK(t, s, `import os, time
while True:
    try:
        if os.fork() == 0:
            while True:
                pass
    except OSError:
        time.sleep(0.01)
`, 2*time.Second)
		if res.Status != entrypoint.StatusTimeout || res.StateLost {
			t.Fatalf("fork loop: %+v", res)
		}
		res = execOK(t, s, `import os
me = os.getpid()
left = []
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) not in (1, me):
        with open('/proc/%s/stat' % p) as f:
            st = f.read()
        if st[st.rfind(')') + 2] not in 'ZX':
            left.append(st)
print(len(left), marker)
for st in left: print(st)
`, 0)
		expect(t, res, entrypoint.StatusSuccess, "0 kept\n")
	})
}

func TestSessionIgnoredInterruptKillsAndReplaces(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := newSession(t, e, entrypoint.Options{InterruptGrace: time.Second})
		execOK(t, s, "doomed = 1", 0)
		res := execOK(t, s, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", time.Second)
		if res.Status != entrypoint.StatusTimeout || !res.StateLost {
			t.Fatalf("%+v", res)
		}
		res = execOK(t, s, "print('doomed' in globals())", 0)
		expect(t, res, entrypoint.StatusSuccess, "False\n")
		if !res.StateLost || res.Notice == "" {
			t.Fatalf("replacement call: StateLost %v notice %q", res.StateLost, res.Notice)
		}
	})
}

func TestSessionOutputFloodCapped(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := newSession(t, e, entrypoint.Options{})
		start := time.Now()
		res := execOK(t, s, "import sys\nchunk = 'y' * 65535 + '\\n'\nfor _ in range(1600): sys.stdout.write(chunk)", 0)
		if res.Status != entrypoint.StatusSuccess || !res.Truncated || len(res.Stdout) > (1<<20)+200 ||
			!strings.Contains(res.Stdout, "[output truncated: 103809024 more bytes not shown]") {
			t.Fatalf("flood: status %s truncated %v stdout %d bytes, tail %q", res.Status, res.Truncated, len(res.Stdout), res.Stdout[max(0, len(res.Stdout)-100):])
		}
		t.Logf("100 MiB flood handled in %v", time.Since(start))
		expect(t, execOK(t, s, "print('after the flood')", 0), entrypoint.StatusSuccess, "after the flood\n")
	})
}

func TestSessionConcurrentRPCs(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		var calls atomic.Int64
		s := newSession(t, e, entrypoint.Options{RPC: func(ctx context.Context, p json.RawMessage) (any, error) {
			calls.Add(1)
			var req struct{ I int }
			if err := json.Unmarshal(p, &req); err != nil {
				return nil, err
			}
			time.Sleep(time.Millisecond)
			return map[string]int{"square": req.I * req.I}, nil
		}})
		res := execOK(t, s, `import asyncio, mcp_sandbox_runtime as rt
out = await asyncio.gather(*[rt.rpc({"i": i}) for i in range(100)])
assert [o["square"] for o in out] == [i * i for i in range(100)]
print(sum(o["square"] for o in out))`, 0)
		expect(t, res, entrypoint.StatusSuccess, "328350\n")
		if calls.Load() != 100 {
			t.Fatalf("handler called %d times", calls.Load())
		}
	})
}

func TestSessionContainerDeathReported(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		spec := settings(t).SandboxSpec("oom-session", nil)
		spec.MemoryBytes = 96 << 20
		s := newSession(t, e, entrypoint.Options{Spec: spec})
		execOK(t, s, "gone = 1", 0)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := s.Execute(ctx, "hog = [b'x' * (1 << 20) for _ in range(400)]", 0)
		if err == nil || !strings.Contains(err.Error(), "OOM-killed") {
			t.Fatalf("err = %v; want a death report naming the OOM kill", err)
		}
		res := execOK(t, s, "print('gone' in globals())", 0)
		expect(t, res, entrypoint.StatusSuccess, "False\n")
		if !res.StateLost || !strings.Contains(res.Notice, "OOM-killed") {
			t.Fatalf("notice %q", res.Notice)
		}
	})
}
