//go:build integration

package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// restartEnv must be 1 for TestFaultEngineRestarted to run: it stops and
// restarts the host's Docker daemon and Podman service, which would break
// every other test running at the time, so scripts/test runs it alone.
const restartEnv = "MCP_TEST_RESTART_ENGINES"

// A daemon is the host process behind an engine's API.
type daemon struct {
	// pattern finds it with pgrep -f.
	pattern string
	// log is where its output goes when restarted (the provisioning log).
	log string
	// unit is the systemd unit that runs it where systemd does (a stock
	// Docker install), restarted with systemctl instead.
	unit string
}

var daemons = map[string]daemon{
	"docker": {pattern: "^dockerd( |$)", log: "/var/log/dockerd.log", unit: "docker"},
	"podman": {pattern: "^podman system service", log: "/var/log/podman-service.log"},
}

// TestFaultEngineRestarted stops the engine's daemon under a bridge with a
// warm session: a call while it is down fails with a clear error and the
// bridge stays up; once the daemon is back, the next call gets a fresh
// session with a notice and no container of the bridge is left behind but
// the new session's.
func TestFaultEngineRestarted(t *testing.T) {
	if os.Getenv(restartEnv) != "1" {
		t.Skipf("stops the engines' daemons: run alone with %s=1 (scripts/test does)", restartEnv)
	}
	for _, name := range engineNames() {
		t.Run(name, func(t *testing.T) {
			e := connect(t, name)
			d := daemons[name]
			cs, cmd := connectBridgeCmd(t, name)
			if text, isErr := runPython(t, cs, map[string]any{"code": "kept = 1\nprint('warm')"}); isErr || text != "warm" {
				t.Fatalf("the first call: %q", text)
			}
			pid := cmd.Process.Pid
			if ids := bridgeContainers(t, e, pid); len(ids) != 1 {
				t.Fatalf("containers of the bridge before the restart: %v", ids)
			}

			start := stopDaemon(t, d, e)
			restarted := false
			t.Cleanup(func() {
				if !restarted {
					start()
				}
			})
			began := time.Now()
			text, isErr := runPython(t, cs, map[string]any{"code": "print(kept)"})
			t.Logf("the call while %s is down (%v): %.300q", name, time.Since(began).Round(time.Millisecond), text)
			if !isErr {
				t.Errorf("a call while the engine is down succeeded: %q", text)
			}
			if !strings.Contains(text, "no container engine is reachable: "+name+" at ") || !strings.Contains(text, "state") {
				t.Errorf("a call while the engine is down: %q, want an error naming the unreachable engine and the lost state", text)
			}
			if processGone(pid) {
				t.Fatal("the bridge exited while the engine was down")
			}

			start()
			restarted = true
			res, isErr := runPython(t, cs, map[string]any{"code": "print('kept' in globals())"})
			if isErr || !strings.Contains(res, "False") || !strings.Contains(res, "new sandbox") {
				t.Errorf("the first call after the restart: %q, want a fresh session with a notice", res)
			}
			if text, isErr := runPython(t, cs, map[string]any{"code": "kept = 2\nprint(kept)"}); isErr || text != "2" {
				t.Errorf("the next call: %q", text)
			}
			eventually(t, "only the new session's container is left", func() bool {
				return len(bridgeContainers(t, e, pid)) == 1
			})
		})
	}
}

// stopDaemon stops d and returns what starts it again and waits until e's
// API answers: systemctl where a systemd unit runs d, else SIGTERM, a wait
// for the exit, and the same command line again.
func stopDaemon(t *testing.T, d daemon, e testEngine) (start func()) {
	t.Helper()
	if unit := d.systemdUnit(); unit != "" {
		// The socket too, or a request would start the unit again.
		if out, err := exec.Command("systemctl", "stop", unit+".socket", unit).CombinedOutput(); err != nil {
			t.Fatalf("systemctl stop %s: %v: %s", unit, err, out)
		}
		t.Logf("stopped the systemd unit %s", unit)
		return func() {
			if out, err := exec.Command("systemctl", "start", unit+".socket", unit).CombinedOutput(); err != nil {
				t.Fatalf("systemctl start %s: %v: %s", unit, err, out)
			}
			waitForAPI(t, e, unit)
		}
	}
	out, err := exec.Command("pgrep", "-o", "-f", d.pattern).Output()
	if err != nil {
		t.Fatalf("finding the daemon (%s): %v", d.pattern, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping %v: %v", argv, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for syscall.Kill(pid, 0) == nil && !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%v (pid %d) did not exit within 60 s of SIGTERM", argv, pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("stopped %v (pid %d)", argv, pid)
	return func() { startDaemon(t, d, argv, e) }
}

// systemdUnit returns d's systemd unit when systemd runs it, else "".
func (d daemon) systemdUnit() string {
	if d.unit == "" {
		return ""
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return ""
	}
	if exec.Command("systemctl", "is-active", "--quiet", d.unit).Run() != nil {
		return ""
	}
	return d.unit
}

// startDaemon starts argv in a session of its own, its output appended to
// d's log, and waits until e's API answers.
func startDaemon(t *testing.T, d daemon, argv []string, e testEngine) {
	t.Helper()
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	// CONTAINER_HOST would make podman a client of the service it is
	// meant to be.
	cmd.Env = envWithout("CONTAINER_HOST", "CONTAINER_CONNECTION")
	// Not the test's directory: conmon writes files into its working
	// directory ("oom" when a sandbox is OOM-killed).
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	go cmd.Wait() // reap it should it die; it outlives the test otherwise
	waitForAPI(t, e, strings.Join(argv, " "))
}

// waitForAPI waits up to 60 s for e's API to answer after what (a daemon)
// started.
func waitForAPI(t *testing.T, e testEngine, what string) {
	t.Helper()
	began := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := e.List(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Since(began) > 60*time.Second {
			t.Fatalf("%s does not answer 60 s after its start: %v", what, errors.Unwrap(err))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("restarted %s, answering after %v", what, time.Since(began).Round(time.Millisecond))
}
