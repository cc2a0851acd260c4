//go:build integration

package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A hostileCase is code that attacks the sandbox or the bridge. Each
// entry of want, or one of its alternatives separated by " | ", must be
// in its output (or error text) for the attempt to count as failed;
// replaces says the session may legitimately be replaced (the next call
// then carries a notice instead of the kept state).
type hostileCase struct {
	name     string
	code     string
	timeout  int
	want     []string
	replaces bool
	// gVisorWant, when set, is want under gVisor, where the case may
	// also replace the session.
	gVisorWant []string
	// once says the bridge or the runtime decides the verdict, whatever
	// engine carries the bytes: the case runs on the first variant only.
	once bool
}

const canaryEnv = "MCP_HOSTILE_CANARY"

var hostileCases = []hostileCase{
	{name: "fork bomb", timeout: 30, code: `import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print("blocked errno", e.errno, "after", n < 200)`, want: []string{"blocked errno 11 after True"},
		// Under gVisor each sleeping Python child costs the Sentry more
		// memory than under runc: the memory limit may stop the bomb
		// before the task limit does.
		gVisorWant: []string{"blocked errno 11 after True | OOM-killed"}},
	{name: "memory bomb", timeout: 60, replaces: true, code: `chunks = []
try:
    while True:
        chunks.append(bytearray(64 << 20))
except MemoryError:
    print("MemoryError")`, want: []string{"MemoryError | OOM-killed"}},
	{name: "fill /tmp", code: `try:
    with open("/tmp/fill", "wb") as f:
        for _ in range(200):
            f.write(b"x" * (1 << 20))
except OSError as e:
    print("blocked errno", e.errno)`, want: []string{"blocked errno 28"}},
	{name: "fill /workspace", code: `try:
    with open("/workspace/fill", "wb") as f:
        for _ in range(300):
            f.write(b"x" * (1 << 20))
except OSError as e:
    print("blocked errno", e.errno)
import os; os.remove("/workspace/fill"); os.remove("/tmp/fill")`, want: []string{"blocked errno 28"}},
	{name: "CPU spin past the timeout", timeout: 1, code: "while True:\n    pass", want: []string{"status: timeout"}},
	{name: "write to / /proc/sysrq-trigger /sys", code: `for p in ("/evil", "/etc/passwd", "/proc/sysrq-trigger", "/sys/kernel/uevent_helper", "/sys/fs/cgroup/x"):
    try:
        open(p, "w").write("b")
        print("WROTE", p)
    except OSError as e:
        print("blocked", p)`, want: []string{"blocked /evil", "blocked /etc/passwd", "blocked /proc/sysrq-trigger", "blocked /sys/kernel/uevent_helper", "blocked /sys/fs/cgroup/x"}},
	{name: "mount", code: `import ctypes, ctypes.util, os
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
r = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
print("mount", r, os.strerror(ctypes.get_errno()))`, want: []string{"mount -1 Operation not permitted"}},
	{name: "ptrace outside the sandbox", code: `import ctypes, ctypes.util, os
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
names = []
for p in pids:
    try:
        names.append(open("/proc/%d/comm" % p).read().strip())
    except OSError:
        pass
host = [n for n in names if n in ("dockerd", "containerd", "podman", "conmon", "systemd", "sshd") or n.startswith("mcp-server")]
print("visible", len(pids) < 10, "host processes", host)
r = libc.ptrace(16, 4194000, None, None)
print("ptrace beyond the namespace", r, ctypes.get_errno() == 3)`, want: []string{"visible True host processes []", "ptrace beyond the namespace -1 True"}},
	{name: "raw and packet sockets", code: `import socket
for fam, typ, proto in ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), (socket.AF_PACKET, socket.SOCK_RAW, 0x0300)):
    try:
        socket.socket(fam, typ, proto)
        print("OPENED")
    except OSError as e:
        print("blocked", type(e).__name__)`, want: []string{"blocked"}},
	{name: "DNS lookup and connect out", code: `import socket
try:
    socket.getaddrinfo("example.com", 80)
    print("RESOLVED")
except OSError as e:
    print("dns blocked")
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    print("CONNECTED")
except OSError as e:
    print("connect blocked")`, want: []string{"dns blocked", "connect blocked"}},
	{name: "engine socket", code: `import os, socket
paths = ("/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock", "/var/run/podman/podman.sock", "/run/containerd/containerd.sock")
print([p for p in paths if os.path.exists(p)])
reached = []
for p in paths:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(p)
            reached.append(p)
        except OSError:
            pass
for addr in (("172.17.0.1", 2375), ("172.17.0.1", 2376), ("10.88.0.1", 2375), ("127.0.0.1", 2375)):
    try:
        socket.create_connection(addr, timeout=2).close()
        reached.append(addr)
    except OSError:
        pass
print("engine reached:", reached)`, want: []string{"[]", "engine reached: []"}},
	{name: "setuid binaries", code: `import os, subprocess
print("setuid", [p for p in ("/bin/su", "/bin/mount", "/usr/bin/passwd", "/usr/bin/su", "/usr/bin/mount") if os.path.exists(p) and os.stat(p).st_mode & 0o4000])
for cmd in (["su", "-c", "id -u"], ["mount", "-t", "tmpfs", "none", "/tmp"], ["passwd", "-d", "root"]):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=10)
        print(cmd[0], "exit", r.returncode != 0, "root" if r.stdout.strip() == "0" else "not root")
    except FileNotFoundError:
        print(cmd[0], "exit True absent")
print("uid", os.getuid(), os.geteuid())`, want: []string{"su exit True", "mount exit True", "passwd exit True", "uid 65534 65534"}},
	{name: "reading the host", code: `import os
print("canary", "` + canaryEnv + `" in os.environ, b"` + canaryEnv + `" in open("/proc/1/environ", "rb").read() if os.access("/proc/1/environ", os.R_OK) else False)
print("bridge binary", os.path.exists(os.environ.get("BRIDGE_BIN", "/nonexistent")))
for p in ("/root", "/home"):
    try:
        print(p, os.listdir(p))
    except OSError:
        print(p, "unreadable")`, want: []string{"canary False False", "bridge binary False"}},
	// Under runc the kernel ignores SIGKILL sent to a PID namespace's init
	// from inside; gVisor delivers it, a little later: the pause lets the
	// container die within this call rather than during a later case.
	{name: "kill -9 1", replaces: true, code: `import os, time
try:
    os.kill(1, 9)
    time.sleep(1)
    print("signalled, still running")
except OSError as e:
    print("blocked errno", e.errno)`, want: []string{"signalled, still running | blocked errno | sandbox died"}},
	{name: "close and corrupt fds 0 1 2", code: `import os
os.write(1, b'{"t":"result","id":"1","status":"ok"}\n')
fd = os.open("/dev/null", os.O_WRONLY)
os.dup2(fd, 1)
os.close(0)
os.close(2)
os.close(1)`, want: []string{`{"t":"result"`}},
	{name: "100 MB of output", timeout: 60, code: `import sys
for _ in range(100):
    sys.stdout.write("x" * (1 << 20))`, want: []string{"truncated"}},
	{name: "invalid UTF-8", code: `import sys
sys.stdout.buffer.write(b"bad \xff\xfe bytes\n")
sys.stderr.buffer.write(b"\xc3\x28\n")`, want: []string{"bad", "bytes"}},
	{name: "a single 1 MB line", code: `print("y" * (1 << 20))`, want: []string{"yyyy"}},
	{name: "10,000 RPCs at once", timeout: 120, code: `import asyncio
from mcp import runtime
r = await asyncio.gather(*[runtime.list_servers() for _ in range(10000)], return_exceptions=True)
print(len(r), sum(isinstance(x, BaseException) for x in r))`, want: []string{"10000 0"}},
	{name: "an RPC to a server not loaded", once: true, code: `from mcp import runtime
try:
    await runtime.call_tool("everything", "echo", {"message": "x"})
except runtime.MCPError as e:
    print(e)`, want: []string{"Server 'everything' is not available"}},
	{name: "forged and repeated RPC ids", once: true, code: `import gc, json
rt = [o for o in gc.get_objects() if type(o).__name__ == "Runtime" and hasattr(o, "chan")][0]
for rid in (1, 1, 999999999, 7):
    rt.chan.send({"t": "rpc", "id": rid, "payload": {"type": "list_servers"}})
from mcp import runtime
print("still", await runtime.list_servers())`, want: []string{"still"}},
	{name: "an oversized RPC payload", once: true, code: `try:
    save_memory("big", "x" * (20 << 20))
except Exception as e:
    print(type(e).__name__, str(e)[:60])`, want: []string{"MCPError the RPC request is", "bytes, over the"}},
}

// TestHostileCode runs every hostile case through the real bridge binary on
// each engine, and Docker under gVisor: the attempt must fail, and the
// bridge and the next call on the same client must still work, with the
// state kept unless the case may replace the session (then with a notice).
func TestHostileCode(t *testing.T) {
	t.Parallel()
	vs := withGVisor(engineVariants())
	forEach(t, vs, func(t *testing.T, v variant) {
		runHostile(t, v.engine, v.gvisor(), v == vs[0], v.env()...)
	})
}

// runHostile runs every hostile case through the bridge binary on engine
// (its environment env); gvisor selects the cases' gVisor expectations
// (the limits of tasks are not the container's pids cgroup); first runs
// the cases decided in the bridge or the runtime (once) too.
func runHostile(t *testing.T, engineName string, gvisor, first bool, env ...string) {
	env = append(env, canaryEnv+"=host-secret", "BRIDGE_BIN="+binary(t))
	cs, cmd := connectBridgeCmd(t, engineName, env...)
	call := func(args map[string]any) (string, bool, map[string]any) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
		if err != nil {
			t.Fatalf("the bridge failed: %v", err)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		return res.Content[0].(*mcp.TextContent).Text, res.IsError, sc
	}
	call(map[string]any{"code": "kept = 42"})
	for _, c := range hostileCases {
		if c.once && !first {
			continue
		}
		args := map[string]any{"code": c.code}
		if c.timeout > 0 {
			args["timeout"] = c.timeout
		}
		text, _, _ := call(args)
		want, replaces := c.want, c.replaces
		if gvisor && c.gVisorWant != nil {
			want, replaces = c.gVisorWant, true
		}
		for _, w := range want {
			if !slices.ContainsFunc(strings.Split(w, " | "), func(alt string) bool { return strings.Contains(text, alt) }) {
				t.Errorf("%s: the output lacks %q:\n%.2000s", c.name, w, text)
			}
		}
		// A sandbox that died after the call returned (gVisor
		// delivers a kill of PID 1 late) must not fail the next
		// call: its code had not begun, so it runs on a fresh one.
		after, isErr, sc := call(map[string]any{"code": "print(globals().get('kept'))"})
		next := "next call: state kept"
		switch {
		case isErr:
			t.Errorf("%s: the next call failed: %s", c.name, after)
		case after == "42":
		case replaces && sc["notice"] != nil:
			next = "next call: fresh session with notice"
			call(map[string]any{"code": "kept = 42"})
		default:
			t.Errorf("%s: the next call printed %q (notice %v), want the state kept", c.name, after, sc["notice"])
		}
		t.Logf("%-40s %-38s %.160q", c.name, next, oneLineText(text))
	}
	if rss := rssBytes(t, cmd.Process.Pid); rss > 300<<20 {
		t.Errorf("the bridge's RSS is %d MiB after the suite", rss>>20)
	}
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
