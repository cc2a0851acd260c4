//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// laneSockets is sandbox code defining lane_sockets(): socket objects on
// the runtime's lane connections (a socket of the process whose peer is
// the lane's), the process's other descriptors left alone. The caller
// detaches them: a collected socket object would close the runtime's.
const laneSockets = `import socket
def lane_sockets():
    found = []
    for fd in range(3, 512):
        try:
            sk = socket.socket(fileno=fd)
        except OSError:
            continue
        try:
            if sk.family == socket.AF_UNIX and str(sk.getpeername()).endswith("/sock"):
                found.append(sk)
                continue
        except OSError:
            pass
        sk.detach()
    return found
`

// laneProbe is sandbox code that reports, in one line, whether the
// runtime's fast lane is connected, what the lane's directory holds, and
// what a second connection to it gets.
const laneProbe = laneSockets + `import os
socks = lane_sockets()
lane = len(socks)
for sk in socks:
    sk.detach()  # the runtime's: never closed here
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect("/run/mcp-lane/sock")
    second = "connected"
except OSError as e:
    second = type(e).__name__
print("lane", lane, "holds", os.listdir("/run/mcp-lane"), "second", second)`

// laneCut is sandbox code that shuts the runtime's lane down in the middle
// of its call, then goes on printing.
const laneCut = laneSockets + `import time
print("before", flush=True)
for sk in lane_sockets():
    sk.shutdown(socket.SHUT_RDWR)
    sk.detach()
time.sleep(0.5)
print("after", kept)`

// TestLaneThroughTheBridge runs the built binary with the fast lane on
// (MCP_BRIDGE_FAST_LANE=1) on Docker and Podman: the runtime's frames
// travel one authenticated connection, the lane's socket is gone once it
// connected (sandbox code cannot open a second lane), output, state and
// a large result come through, and a lane shut down mid-call falls back
// to the stream without losing the call, its output or the state.
func TestLaneThroughTheBridge(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		var stderr lockedBuffer
		root := filepath.Join(t.TempDir(), "lanes")
		cs, _, _ := launchBridge(t, []string{"MCP_BRIDGE_RUNTIME=" + e.Name(), "MCP_BRIDGE_LOG_LEVEL=INFO",
			"MCP_BRIDGE_FAST_LANE=1", "MCP_BRIDGE_FAST_LANE_DIR=" + root}, &stderr, nil)
		text, isErr := runPython(t, cs, map[string]any{"code": "kept = 'state'\n" + laneProbe})
		if isErr || text != "lane 1 holds [] second FileNotFoundError" {
			t.Fatalf("the probe: %q (error %v); stderr:\n%s", text, isErr, stderr.String())
		}
		text, isErr = runPython(t, cs, map[string]any{"code": "print('x' * 20000, end='')"})
		if isErr || text != strings.Repeat("x", 20000) {
			t.Fatalf("a large output: %d bytes, error %v", len(text), isErr)
		}
		text, isErr = runPython(t, cs, map[string]any{"code": laneCut})
		if isErr || text != "before\nafter state" {
			t.Fatalf("the call whose lane was cut: %q (error %v); stderr:\n%s", text, isErr, stderr.String())
		}
		text, isErr = runPython(t, cs, map[string]any{"code": "print(kept)\n" + laneProbe})
		if isErr || !strings.HasPrefix(text, "state\nlane 0 ") {
			t.Fatalf("after the fall back: %q (error %v)", text, isErr)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(stderr.String(), "the fast lane to the sandbox broke") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if log := stderr.String(); !strings.Contains(log, "the fast lane to the sandbox broke") || !strings.Contains(log, "intact=true") {
			t.Errorf("no log line of the lane's break, intact:\n%s", log)
		}
	})
}

// TestLaneReadsFilesOut reads files out over the lane on Docker and
// Podman: a 48 MiB file comes whole, a link to a host-side file of the
// image and a file under a linked directory are refused, a missing file
// is fs.ErrNotExist, and a file over the bound is refused.
func TestLaneReadsFilesOut(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		lanes, err := entrypoint.NewLanes(filepath.Join(t.TempDir(), "lanes"), testLogger())
		if err != nil {
			t.Fatal(err)
		}
		s := entrypoint.New(e, &entrypoint.Options{Spec: settings(t).SandboxSpec("lane-read", nil), Logger: testLogger(), Lanes: lanes})
		t.Cleanup(func() { s.Close() })
		ctx := context.Background()
		res, err := s.Execute(ctx, `import os
data = bytes(range(256)) * (48 * 4096)
with open("/workspace/out/big.bin", "wb") as f:
    f.write(data)
os.symlink("/etc/passwd", "/workspace/out/link")
os.symlink("/etc", "/workspace/out/sub")
print(len(data))`, time.Minute)
		if err != nil || res.Status != entrypoint.StatusSuccess {
			t.Fatalf("writing the files: %+v %v", res, err)
		}
		if st := lanes.Status()[""]; st.Path != "lane" {
			t.Fatalf("no lane: %+v", st)
		}
		began := time.Now()
		got, err := s.ReadFile(ctx, engine.OutDir, "big.bin", 256<<20)
		took := time.Since(began)
		want := bytes.Repeat(func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}(), 48*4096)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("big.bin: %d bytes, %v", len(got), err)
		}
		t.Logf("%s: 48 MiB read over the lane in %v", e.Name(), took)
		for _, rel := range []string{"link", "sub/passwd"} {
			if got, err := s.ReadFile(ctx, engine.OutDir, rel, 1<<20); err == nil || bytes.Contains(got, []byte("root:")) {
				t.Errorf("%s: read through a link: %q %v", rel, got, err)
			}
		}
		if _, err := s.ReadFile(ctx, engine.OutDir, "missing", 1<<20); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
		}
		if _, err := s.ReadFile(ctx, engine.OutDir, "big.bin", 1<<20); err == nil || !strings.Contains(err.Error(), "over") {
			t.Errorf("a file over the bound: %v", err)
		}
	})
}
