//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// snapshotEnv is the environment of a replica whose idle sandboxes sleep
// after idle seconds, on Docker under gVisor, with the data image
// (numpy).
func snapshotEnv(key, token, name string, idle int) httpOpts {
	o := replicaEnv(key, token, name, "MCP_BRIDGE_SNAPSHOTS=1", "MCP_BRIDGE_OCI_RUNTIME=runsc",
		"MCP_BRIDGE_SESSION_IDLE_TIMEOUT="+strconv.Itoa(idle), "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT="+strconv.Itoa(idle),
		"MCP_BRIDGE_IMAGE="+dataImage())
	o.env = append(o.env, "MCP_BRIDGE_POOL_SIZE=0")
	return o
}

// needSnapshots skips unless Docker runs gVisor in experimental mode,
// which scripts/provision sets up: under scripts/test (MCP_TEST_STRICT)
// it fails instead.
func needSnapshots(t *testing.T) testEngine {
	t.Helper()
	if !slices.Contains(engineNames(), engine.BackendDocker) {
		t.Skip("needs Docker (MCP_TEST_ENGINES)")
	}
	e := connect(t, engine.BackendDocker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if why := engine.CanSnapshot(ctx, e); why != "" {
		t.Fatalf("sessions that sleep and fork need Docker with gVisor in experimental mode (scripts/provision): %s", why)
	}
	return e
}

// asleep waits until the bridge's log says n sandboxes went to sleep.
func (b *httpBridge) asleep(t *testing.T, n int) {
	t.Helper()
	waitFor(t, 90*time.Second, "the idle sandbox to sleep", func() bool {
		return strings.Count(b.log.String(), "the idle sandbox is asleep") >= n
	})
}

// healthMap returns the bridge's /healthz answer as a map.
func (b *httpBridge) healthMap(t *testing.T) map[string]any {
	t.Helper()
	res, err := b.httpClient(b.token).Get(strings.TrimSuffix(b.url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

var forksLine = regexp.MustCompile(`forks: ((?:\S+ ?)+) \(pass one`)

// TestSnapshotsSleepWakeFork: on Docker with gVisor and
// MCP_BRIDGE_SNAPSHOTS=1, a handle's idle sandbox sleeps (checkpointed,
// its container stopped) and wakes through another replica with its
// globals, a thread, an open file and a numpy array; a fork's copies see
// their parent's state, and their changes reach neither parent nor
// siblings, their random numbers differ; a checkpoint removed behind the
// bridge is a clear error and a fresh sandbox, the rest untouched; code
// in the sandbox finds no checkpoint.
func TestSnapshotsSleepWakeFork(t *testing.T) {
	e := needSnapshots(t)
	key, token := strings.Repeat("k", 40), "snapshot-token-0123456789"
	a := startHTTPBridge(t, e, snapshotEnv(key, token, "a", 3))
	b := startHTTPBridge(t, e, snapshotEnv(key, token, "b", 3))
	removeResumable(t, e, a, b)
	ca, cb := a.dialStateless(t, a.url), b.dialStateless(t, b.url)

	setup := `import threading, time, numpy as np
x = 42
ticks = [0]
def tick():
    while True:
        ticks[0] += 1
        time.sleep(0.05)
threading.Thread(target=tick, daemon=True).start()
f = open("/tmp/kept.txt", "w+")
f.write("written before sleep")
f.flush()
arr = np.arange(1_000_000, dtype=np.int64)
t0 = time.monotonic()
print("set", arr.sum())`
	text, isErr, h := runIn(t, ca, "", setup, 60)
	if isErr || h == "" || !strings.Contains(text, "set 499999500000") {
		t.Fatalf("setting up: error %v, handle %q: %s", isErr, h, text)
	}
	a.asleep(t, 1)
	waitFor(t, 30*time.Second, "the sleeping sandbox's container to stop", func() bool {
		sandboxes := a.containers(t)
		return len(sandboxes) == 1 && sandboxes[0].State == "exited"
	})
	time.Sleep(2 * time.Second) // asleep for a while
	if h := a.healthMap(t); h["sleeping"] != 1.0 || h["sleeping_bytes"].(float64) < 1<<20 {
		t.Errorf("/healthz should show the sleeping sandbox and its checkpoint's disk: %v", h)
	}

	check := `before = ticks[0]
time.sleep(0.3)
f.seek(0)
print(x, f.read(), int(arr.sum()), ticks[0] > before, round(time.monotonic() - t0, 1))`
	text, isErr, _ = runIn(t, cb, h, check, 60)
	if isErr || !strings.Contains(text, "42 written before sleep 499999500000 True") {
		t.Fatalf("woken through the other replica, the state should be whole: error %v: %s", isErr, text)
	}
	if !strings.Contains(text, "was asleep") || !strings.Contains(text, "woken in") {
		t.Errorf("the result should say the sandbox was woken and how long that took: %s", text)
	}
	t.Logf("woken through replica b: %s", text)

	// Files out of a sandbox that sleeps are in a tmpfs of its own, which
	// the daemon's archive calls do not see: a whole output kept there and
	// a file of 2 MiB (past what a result carries inline) are read through
	// the sandbox's exec, by the other replica.
	res, err := cb.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"session": h,
		"code": "print('y' * 50000)\nopen('/workspace/out/big.bin', 'w').write('z' * (2 << 20))"}})
	if err != nil || res.IsError {
		t.Fatalf("a call with a big output and a big file: %v %+v", err, res)
	}
	var uris []string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			uris = append(uris, l.URI)
		}
	}
	if len(uris) != 2 {
		t.Fatalf("resource links %q, want the output's and the file's", uris)
	}
	for _, u := range uris {
		got, err := ca.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: u})
		if err != nil || len(got.Contents) != 1 {
			t.Fatalf("reading %s through replica a: %v", u, err)
		}
		if c := got.Contents[0]; !strings.Contains(c.Text, strings.Repeat("y", 50000)) && len(c.Blob) != 2<<20 && len(c.Text) != 2<<20 {
			t.Fatalf("%s through replica a: %d bytes, %.80q", u, len(c.Text)+len(c.Blob), c.Text)
		}
	}

	// Woken again, from two replicas at once: one wake, both calls run.
	waitFor(t, 90*time.Second, "the sandbox to sleep again", func() bool {
		c := a.containers(t)
		return len(c) == 1 && c[0].State == "exited"
	})
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i, c := range []*mcp.ClientSession{ca, cb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _, _ = runIn(t, c, h, "x += 1\nprint('x', x)", 60)
		}()
	}
	wg.Wait()
	if !(strings.Contains(outs[0]+outs[1], "x 43") && strings.Contains(outs[0]+outs[1], "x 44")) {
		t.Fatalf("two replicas waking the sandbox at once should both run, once each, in the same state: %q", outs)
	}

	// Fork into two, after a call's code.
	text, isErr, _ = runWith(t, ca, map[string]any{"code": "import random, os\ny = 7\nprint('parent', y)", "session": h, "fork": 2, "timeout": 60})
	m := forksLine.FindStringSubmatch(text)
	if isErr || m == nil {
		t.Fatalf("fork: 2 should give two handles: error %v: %s", isErr, text)
	}
	forks := strings.Fields(m[1])
	if len(forks) != 2 || forks[0] == forks[1] || slices.Contains(forks, h) {
		t.Fatalf("forks %q of %q", forks, h)
	}
	probe := "y += 1\nprint('y', y, x, random.random(), os.urandom(8).hex(), int(arr.sum()))"
	var seen []string
	for _, fh := range forks {
		out, isErr, _ := runIn(t, ca, fh, probe, 60)
		if isErr || !strings.Contains(out, "y 8 44 ") || !strings.Contains(out, " 499999500000") {
			t.Fatalf("a fork should see its parent's state and its own change: error %v: %s", isErr, out)
		}
		seen = append(seen, out)
	}
	f1, f2 := strings.Fields(seen[0]), strings.Fields(seen[1])
	if f1[3] == f2[3] || f1[4] == f2[4] {
		t.Errorf("the forks' random.random() and os.urandom should differ: %q and %q", seen[0], seen[1])
	}
	out, _, _ := runIn(t, cb, h, "print('parent y', y)", 60)
	if !strings.Contains(out, "parent y 7") {
		t.Errorf("a fork's change reached its parent: %s", out)
	}

	// Hostile code looks for the checkpoint: it sees none.
	hunt := `import os
hits = []
for root, dirs, files in os.walk("/", onerror=lambda e: None):
    if root.startswith("/proc") or root.startswith("/sys"):
        dirs[:] = []
        continue
    hits += [os.path.join(root, n) for n in files + dirs if "checkpoint" in n or n.endswith(".img") or "mcp-sleep" in n]
print("hits", hits[:5])
print("mounts", [l.split()[4] for l in open("/proc/self/mountinfo") if "checkpoint" in l][:5])`
	out, _, _ = runIn(t, ca, forks[0], hunt, 120)
	if !strings.Contains(out, "hits []") || !strings.Contains(out, "mounts []") {
		t.Errorf("code in the sandbox found traces of the engine's checkpoints: %s", out)
	}

	// A checkpoint removed behind the bridge: the handle says so, a new
	// sandbox serves, the forks are untouched.
	var parentID string
	waitFor(t, 90*time.Second, "the parent sandbox to sleep again", func() bool {
		for _, c := range a.containers(t) {
			if c.State == "exited" && !strings.HasSuffix(c.Labels[engine.LabelSession], "/fork") {
				parentID = c.ID
			}
		}
		return parentID != ""
	})
	removeCheckpoints(t, parentID)
	out, isErr, _ = runIn(t, cb, h, "print(x)", 60)
	if !isErr || !strings.Contains(out, "checkpoint is gone") {
		t.Errorf("a handle whose checkpoint was removed should say so: error %v: %s", isErr, out)
	}
	if out, isErr, nh := runIn(t, cb, "", "print('fresh', 'x' in globals())", 60); isErr || nh == "" || !strings.Contains(out, "fresh False") {
		t.Errorf("a new sandbox should serve after a lost checkpoint: %v %s", isErr, out)
	}
	if out, isErr, _ := runIn(t, ca, forks[1], "print('fork still', y, x)", 60); isErr || !strings.Contains(out, "fork still 8 44") {
		t.Errorf("the fork should be untouched by its parent's lost checkpoint: %v %s", isErr, out)
	}
}

// TestSnapshotsRefusedElsewhere: MCP_BRIDGE_SNAPSHOTS=1 on an engine
// that cannot checkpoint (Podman), or without gVisor, is a clear error at
// start naming the engine and why.
func TestSnapshotsRefusedElsewhere(t *testing.T) {
	for _, tc := range []struct {
		engine, runtime, want string
	}{
		{engine.BackendPodman, "runsc", "podman: Podman refuses checkpoints under gVisor"},
		{engine.BackendDocker, "runc", "needs gVisor"},
	} {
		t.Run(tc.engine+"+"+tc.runtime, func(t *testing.T) {
			if !slices.Contains(engineNames(), tc.engine) {
				t.Skip("needs " + tc.engine)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary(t), "serve", "-http", "127.0.0.1:0")
			cmd.Env = append(envWithout(httpVars...), "HOME="+t.TempDir(), "MCP_BRIDGE_RUNTIME="+tc.engine,
				"MCP_BRIDGE_SNAPSHOTS=1", "MCP_BRIDGE_OCI_RUNTIME="+tc.runtime)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "MCP_BRIDGE_SNAPSHOTS") {
				t.Fatalf("want a failed start saying %q: err %v\n%s", tc.want, err, out)
			}
		})
	}
}

// TestSnapshotsStdio: a stdio client's one session (2025-11-25) sleeps
// when idle and wakes with its state, forks from the current session
// (the copies' handles passed as session), and leaves no container, awake
// or asleep, when the client goes; tools/list offers fork only here.
func TestSnapshotsStdio(t *testing.T) {
	e := needSnapshots(t)
	stderr := &lockedBuffer{}
	cs, cmd, _ := launchBridge(t, []string{"MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=INFO", "MCP_BRIDGE_SNAPSHOTS=1",
		"MCP_BRIDGE_OCI_RUNTIME=runsc", "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT=2", "HOME=" + t.TempDir()}, stderr, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	if props := tools.Tools[0].InputSchema.(map[string]any)["properties"].(map[string]any); props["fork"] == nil {
		t.Errorf("run_python should take fork where sandboxes fork: %v", props)
	}
	raw, _ := json.Marshal(tools)
	if c := countTokens(t, string(raw))[0]; c.CL100K > 300 || c.O200K > 300 {
		t.Errorf("tools/list with fork is %+v tokens, over 300", c)
	} else {
		t.Logf("tools/list with fork: %+v tokens", c)
	}
	if out, isErr := runPython(t, cs, map[string]any{"code": "z = 5\nopen('/workspace/out/made.txt', 'w').write('out file')\nprint('z set')"}); isErr || !strings.Contains(out, "z set") {
		t.Fatalf("first call: %v %s", isErr, out)
	}
	waitFor(t, 60*time.Second, "the idle session's sandbox to sleep", func() bool {
		return strings.Contains(stderr.String(), "the idle sandbox is asleep")
	})
	out, isErr := runPython(t, cs, map[string]any{"code": "print('z is', z, open('/workspace/out/made.txt').read())"})
	if isErr || !strings.Contains(out, "z is 5 out file") || !strings.Contains(out, "was asleep") {
		t.Fatalf("the woken session should keep its state and say it slept: %v %s", isErr, out)
	}
	out, isErr = runPython(t, cs, map[string]any{"code": "w = 1\nopen('/workspace/out/before.txt', 'w').write('parent file')\nkeep = open('/workspace/out/held.txt', 'w+')", "fork": 2})
	m := forksLine.FindStringSubmatch(out)
	if isErr || m == nil || len(strings.Fields(m[1])) != 2 {
		t.Fatalf("fork: 2 of the current session: %v %s\n%s", isErr, out, stderr.String())
	}
	for _, h := range strings.Fields(m[1]) {
		if out, isErr := runPython(t, cs, map[string]any{"code": "import os\nw += 1\nprint('fork', w, z, sorted(os.listdir('/workspace/out')))", "session": h}); isErr || !strings.Contains(out, "fork 2 5") {
			t.Fatalf("a fork of the current session: %v %s", isErr, out)
		}
	}
	if out, _ := runPython(t, cs, map[string]any{"code": "print('parent', w)"}); !strings.Contains(out, "parent 1") {
		t.Errorf("the forks' changes reached the parent: %s", out)
	}
	if n := len(containersOf(t, e, cmd.Process.Pid)); n != 3 {
		t.Errorf("want the session's sandbox and its two forks, have %d containers", n)
	}
	// Its checkpoint removed behind the bridge: a fresh sandbox, and the
	// call is told why.
	var parent string
	waitFor(t, time.Minute, "the session's sandbox to sleep again", func() bool {
		for _, c := range containersOf(t, e, cmd.Process.Pid) {
			if c.State == "exited" && !strings.HasSuffix(c.Labels[engine.LabelSession], "/fork") {
				parent = c.ID
			}
		}
		return parent != ""
	})
	removeCheckpoints(t, parent)
	out, isErr = runPython(t, cs, map[string]any{"code": "print('z' in globals())"})
	if isErr || !strings.Contains(out, "False") || !strings.Contains(out, "could not be woken") {
		t.Errorf("a session whose checkpoint was removed should go on in a fresh sandbox, told why: %v %s", isErr, out)
	}
	cs.Close()
	waitFor(t, time.Minute, "the bridge to exit", func() bool { return cmd.ProcessState != nil })
	if left := containersOf(t, e, cmd.Process.Pid); len(left) != 0 {
		t.Errorf("the bridge left %d containers: %+v", len(left), left)
	}
}

// TestSnapshotsTypeScript: the TypeScript SDK v2 client (protocol
// 2026-07-28) keeps a handle across its sandbox's sleep, is told it was
// woken, and forks it, the forks' handles in structuredContent.
func TestSnapshotsTypeScript(t *testing.T) {
	e := needSnapshots(t)
	key, token := strings.Repeat("t", 40), "snapshot-token-ts-0123456789"
	b := startHTTPBridge(t, e, snapshotEnv(key, token, "ts", 2))
	removeResumable(t, e, b)
	node := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command("node", append([]string{filepath.Join(nodeDir(t), "snapshots.mjs"), b.url}, args...)...)
		cmd.Env = append(os.Environ(), "MCP_TOKEN="+token)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("snapshots.mjs %v: %v\n%s", args, err, exitStderr(err))
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("snapshots.mjs %v printed %q: %v", args, out, err)
		}
		return v
	}
	h, _ := node("setup")["handle"].(string)
	b.asleep(t, 1)
	got := node("wake", h)
	if woken, _ := got["woken"].(string); !strings.Contains(woken, "x is 41") || !strings.Contains(woken, "was asleep") {
		t.Errorf("the woken call: %q", got["woken"])
	}
	outs, _ := got["forkOutputs"].([]any)
	if len(outs) != 2 {
		t.Fatalf("fork outputs: %v", got)
	}
	for _, o := range outs {
		if s, _ := o.(string); !strings.Contains(s, "2 41") {
			t.Errorf("a fork's output: %q", o)
		}
	}
}

// removeCheckpoints removes, with the docker CLI, behind the bridge, the
// checkpoints of container id; it fails the test when there were none.
func removeCheckpoints(t *testing.T, id string) {
	t.Helper()
	out, err := exec.Command("docker", "checkpoint", "ls", id).Output()
	if err != nil {
		t.Fatalf("docker checkpoint ls: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("container %s has no checkpoint: %q", id, out)
	}
	for _, name := range lines[1:] {
		if out, err := exec.Command("docker", "checkpoint", "rm", id, strings.TrimSpace(name)).CombinedOutput(); err != nil {
			t.Fatalf("removing checkpoint %s: %v: %s", name, err, out)
		}
	}
}

// exitStderr is the standard error an *exec.ExitError kept.
func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// TestSnapshotsReplicaGone: the idle sandbox of a handle whose replica
// died is put to sleep by another replica's sweep (it asks the runtime
// when it was last called), before the runtime would end itself, and
// wakes there with its state.
func TestSnapshotsReplicaGone(t *testing.T) {
	e := needSnapshots(t)
	key, token := strings.Repeat("g", 40), "snapshot-token-gone-0123456789"
	// Idle after 6 s: the runtime would end itself after 12 s; the other
	// replica starts after 6.5 s, its first sweep right away.
	a := startHTTPBridge(t, e, snapshotEnv(key, token, "a", 6))
	ca := a.dialStateless(t, a.url)
	text, isErr, h := runIn(t, ca, "", "x = 'kept'\nprint('set')", 60)
	if isErr || h == "" {
		t.Fatalf("setting up: %v %s", isErr, text)
	}
	ca.Close()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	time.Sleep(6500 * time.Millisecond) // past the idle timeout, before twice it
	b := startHTTPBridge(t, e, snapshotEnv(key, token, "b", 6))
	removeResumable(t, e, a, b)
	waitFor(t, 30*time.Second, "the other replica to put the sandbox to sleep", func() bool {
		return strings.Contains(b.log.String(), "put an idle sandbox that no bridge holds to sleep")
	})
	out, isErr, _ := runIn(t, b.dialStateless(t, b.url), h, "print('x is', x)", 60)
	if isErr || !strings.Contains(out, "x is kept") || !strings.Contains(out, "was asleep") {
		t.Fatalf("woken through the replica that put it to sleep: %v %s", isErr, out)
	}
}

// TestSnapshotsOverMax: a sandbox whose memory is over
// MCP_BRIDGE_SNAPSHOT_MAX is not checkpointed: it stays awake with its
// state, and the log says why.
func TestSnapshotsOverMax(t *testing.T) {
	needSnapshots(t)
	stderr := &lockedBuffer{}
	cs, _, _ := launchBridge(t, []string{"MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=INFO", "MCP_BRIDGE_SNAPSHOTS=1",
		"MCP_BRIDGE_OCI_RUNTIME=runsc", "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT=2", "MCP_BRIDGE_SNAPSHOT_MAX=1m", "HOME=" + t.TempDir()}, stderr, nil)
	if out, isErr := runPython(t, cs, map[string]any{"code": "kept = bytes(8 << 20)\nprint('held')"}); isErr || !strings.Contains(out, "held") {
		t.Fatalf("first call: %v %s", isErr, out)
	}
	waitFor(t, time.Minute, "the bridge to leave the large sandbox awake", func() bool {
		return strings.Contains(stderr.String(), "its memory is over MCP_BRIDGE_SNAPSHOT_MAX; it stays awake")
	})
	out, isErr := runPython(t, cs, map[string]any{"code": "print(len(kept))"})
	if isErr || !strings.Contains(out, "8388608") || strings.Contains(out, "was asleep") || strings.Contains(stderr.String(), "the idle sandbox is asleep") {
		t.Errorf("the sandbox should have stayed awake with its state: %v %s", isErr, out)
	}
}
