//go:build integration

package integration

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

func TestMemoryLimitEnforcedAndOOMReported(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		spec := pySpec(t, "oom")
		spec.MemoryBytes = 64 << 20
		// Touch 256 MiB: four times the limit, with no swap to go to.
		r := runPy(t, e, spec, "blocks = []\nfor i in range(256):\n    blocks.append(b'x' * (1 << 20))\nprint('survived')\n")
		if strings.Contains(r.stdout, "survived") {
			t.Fatalf("allocated 256 MiB under a 64 MiB limit: %+v", r)
		}
		if !r.status.OOMKilled || r.status.Code != 137 {
			t.Fatalf("status = %+v (%v); want OOM-killed with exit code 137", r.status, r.status)
		}
		err := r.status.Err()
		var ee *engine.ExitError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "OOM-killed") || !strings.Contains(err.Error(), "64 MiB") {
			t.Fatalf("death report = %v; want it to say OOM-killed and the limit", err)
		}
	})
}

func TestPidsLimitStopsForkLoop(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		spec := pySpec(t, "pids")
		spec.PidsLimit = 32
		code := `
import os, signal, time
kids = []
err = ""
for i in range(500):
    try:
        pid = os.fork()
    except OSError as e:
        err = str(e)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
print(len(kids))
print(err)
`
		r := runPy(t, e, spec, code)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.status.Code != 0 || len(lines) != 2 {
			t.Fatalf("fork probe: %v\nstdout: %s\nstderr: %s", r.status, r.stdout, r.stderr)
		}
		n, _ := strconv.Atoi(lines[0])
		if n < 1 || n >= 32 || !strings.Contains(lines[1], "Resource temporarily unavailable") {
			t.Fatalf("forked %d children before %q; want the loop stopped by EAGAIN below the limit of 32", n, lines[1])
		}
	})
}

func TestStreamsDemultiplexedNothingLost(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// Output written the instant the process starts must arrive:
		// streams are attached before the container starts.
		spec := settings(t).SandboxSpec("early", []string{"python3", "-c", "import sys; print('early-out'); print('early-err', file=sys.stderr)"})
		r := runPy(t, e, spec, "")
		if r.stdout != "early-out\n" || r.stderr != "early-err\n" || r.status.Code != 0 {
			t.Fatalf("early output: %+v", r)
		}
		// 8 MiB on stdout and 1 MiB on stderr, interleaved: every byte
		// arrives on the right stream, through buffers of 256 KiB.
		r = runPy(t, e, pySpec(t, "volume"), `
import sys
for i in range(1024):
    sys.stdout.write("o" * 8191 + "\n")
    sys.stderr.write("e" * 1023 + "\n")
`)
		if len(r.stdout) != 8<<20 || strings.Trim(r.stdout, "o\n") != "" {
			t.Fatalf("stdout: %d bytes, want %d of 'o'", len(r.stdout), 8<<20)
		}
		if len(r.stderr) != 1<<20 || strings.Trim(r.stderr, "e\n") != "" {
			t.Fatalf("stderr: %d bytes, want %d of 'e'", len(r.stderr), 1<<20)
		}
	})
}

func TestStdinEOFReachesContainer(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		spec := settings(t).SandboxSpec("stdin", []string{"python3", "-c", "import sys; d = sys.stdin.read(); print(len(d), d.count('\\n'))"})
		input := strings.Repeat("line of input\n", 100000)
		r := runPy(t, e, spec, input)
		if want := strconv.Itoa(len(input)) + " 100000\n"; r.stdout != want {
			t.Fatalf("stdout = %q, want %q (stderr %q)", r.stdout, want, r.stderr)
		}
	})
}

func TestExitCodeReported(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		r := runPy(t, e, pySpec(t, "exit"), "import sys; sys.exit(7)")
		if r.status.Code != 7 || r.status.OOMKilled || !strings.Contains(r.status.Err().Error(), "exited with code 7") {
			t.Fatalf("status = %+v, err %v", r.status, r.status.Err())
		}
	})
}

func TestSignalReachesMainProcessThroughInit(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sb, err := e.Start(ctx, settings(t).SandboxSpec("signal", []string{"python3", "-u", "-c", `
import signal, sys, time
def onint(*a):
    print("got SIGINT")
    sys.exit(3)
signal.signal(signal.SIGINT, onint)
print("ready")
while True:
    time.sleep(0.05)
`}))
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		go io.Copy(io.Discard, sb.Stderr())
		out := bufio.NewReader(sb.Stdout())
		if line, err := out.ReadString('\n'); line != "ready\n" {
			t.Fatalf("first line %q, %v", line, err)
		}
		// Signal is no part of engine.Sandbox: only this test uses it.
		sig, ok := sb.(interface {
			Signal(context.Context, syscall.Signal) error
		})
		if !ok {
			t.Fatalf("%T has no Signal method", sb)
		}
		if err := sig.Signal(ctx, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(out)
		st, err := sb.Wait(ctx)
		if err != nil || st.Code != 3 || string(rest) != "got SIGINT\n" {
			t.Fatalf("after SIGINT: status %+v, err %v, output %q", st, err, rest)
		}
	})
}

func TestCloseStopsAndRemoves(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// A process that ignores SIGTERM: Close must still end it.
		sb, err := e.Start(ctx, settings(t).SandboxSpec("close", []string{"python3", "-c",
			"import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)"}))
		if err != nil {
			t.Fatal(err)
		}
		id := sb.ID()
		go io.Copy(io.Discard, sb.Stdout())
		go io.Copy(io.Discard, sb.Stderr())
		if !slices.ContainsFunc(list(t, e), func(s engine.SandboxInfo) bool { return s.ID == id }) {
			t.Fatalf("container %s not listed while running", id)
		}
		start := time.Now()
		if err := sb.Close(); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(list(t, e), func(s engine.SandboxInfo) bool { return s.ID == id }) {
			t.Fatalf("container %s still exists after Close", id)
		}
		t.Logf("Close of a SIGTERM-ignoring container took %v", time.Since(start))
		if err := sb.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// TestOrphansRemovedAtStart kills a bridge process with SIGKILL while its
// sandbox runs, then checks the next connection removes the container.
func TestOrphansRemovedAtStart(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cmd := exec.Command(bin, "exec", "-timeout", "0", "-c", "import time; print('up', flush=True); time.sleep(300)")
		cmd.Env = append(envWithout("MCP_BRIDGE_RUNTIME"), "MCP_BRIDGE_RUNTIME="+e.Name())
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if line != "up\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("bridge sandbox did not come up: %q", line)
		}
		pid := strconv.Itoa(cmd.Process.Pid)
		owned := func() []string {
			var ids []string
			for _, s := range list(t, e) {
				if s.Labels[engine.LabelPID] == pid {
					ids = append(ids, s.ID)
				}
			}
			return ids
		}
		if len(owned()) != 1 {
			t.Fatalf("want 1 container labelled with bridge pid %s, got %v", pid, owned())
		}
		cmd.Process.Kill()
		cmd.Wait()
		if len(owned()) != 1 {
			t.Fatal("the SIGKILLed bridge's container vanished by itself; the test proves nothing")
		}
		// A new connection (as a new bridge process makes) cleans up.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fresh, err := openEngine(ctx, e.Name(), "")
		if err == nil {
			fresh.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		if ids := owned(); len(ids) != 0 {
			t.Fatalf("orphans of dead bridge %s remain: %v", pid, ids)
		}
	})
}

func list(t *testing.T, e testEngine) []engine.SandboxInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := e.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
