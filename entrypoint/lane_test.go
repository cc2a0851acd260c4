package entrypoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
)

// newLanes returns a Lanes in a directory of the test's own.
func newLanes(t *testing.T) *Lanes {
	t.Helper()
	l, err := NewLanes(filepath.Join(t.TempDir(), "lanes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// laneInUse reports whether s's sandbox frames travel its lane.
func laneInUse(s *Session) bool {
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	if ctr == nil {
		return false
	}
	ctr.wmu.Lock()
	defer ctr.wmu.Unlock()
	return ctr.link != nil && ctr.link.conn != nil && !ctr.link.broken && !ctr.link.settled
}

func TestLaneCarriesTheFrames(t *testing.T) {
	lanes := newLanes(t)
	s := newLocal(t, Options{Lanes: lanes, MaxOutputBytes: -1, RPC: func(ctx context.Context, p json.RawMessage) (any, error) {
		return map[string]string{"echo": string(p)}, nil
	}})
	exec1(t, s, "x = 41", 0)
	if !laneInUse(s) {
		t.Fatalf("the lane is not in use; status %v", lanes.Status())
	}
	if st := lanes.Status()[""]; st.Path != "lane" {
		t.Fatalf("status %+v, want the lane", st)
	}
	// The socket is gone once the runtime connected: no second connection.
	entries, _ := filepath.Glob(filepath.Join(lanes.Dir(), "*", laneSocket))
	if len(entries) != 0 {
		t.Fatalf("sockets left after the handshake: %v", entries)
	}
	big := strings.Repeat("y", 3<<20)
	res := exec1(t, s, `import mcp_sandbox_runtime as r
print(x + 1)
v = await r.rpc({"k": "`+big[:10]+`"})
print(len(v["echo"]))
print("z" * (3 << 20), end="")`, 0)
	if res.Status != StatusSuccess || !strings.HasPrefix(res.Stdout, "42\n18\n") || len(res.Stdout) < 3<<20 {
		t.Fatalf("got %s %q… (%d bytes), exc %s", res.Status, res.Stdout[:min(40, len(res.Stdout))], len(res.Stdout), res.ExceptionMessage)
	}
	if !laneInUse(s) {
		t.Fatal("the lane fell back")
	}
}

// TestLaneBreaksMidCall cuts the lane from sandbox code in the middle of
// a call: the call's frames carry on over the stream, nothing is lost,
// and the session keeps its state.
func TestLaneBreaksMidCall(t *testing.T) {
	lanes := newLanes(t)
	s := newLocal(t, Options{Lanes: lanes})
	exec1(t, s, "kept = 'state'", 0)
	if !laneInUse(s) {
		t.Fatal("no lane")
	}
	res := exec1(t, s, `import os, socket, time
print("before")
for fd in range(3, 256):
    try:
        sk = socket.socket(fileno=fd)
    except OSError:
        continue
    try:
        peer = sk.getpeername()
    except OSError:
        peer = ""
    if isinstance(peer, str) and peer.endswith("/sock"):
        sk.shutdown(socket.SHUT_RDWR)
    sk.detach()
time.sleep(0.3)
print("after", kept)`, 10*time.Second)
	if res.Status != StatusSuccess || res.Stdout != "before\nafter state\n" {
		t.Fatalf("got %s %q, notice %q", res.Status, res.Stdout, res.Notice)
	}
	if laneInUse(s) {
		t.Fatal("the lane is still in use")
	}
	want(t, exec1(t, s, "print(kept)", 0), StatusSuccess, "state\n")
}

// TestLaneBrokenByTheHost closes the host's end while a call waits: the
// runtime reports the break on the stream and the call ends there.
func TestLaneBrokenByTheHost(t *testing.T) {
	lanes := newLanes(t)
	s := newLocal(t, Options{Lanes: lanes})
	exec1(t, s, "kept = 7", 0)
	done := make(chan *Result, 1)
	go func() { done <- exec1(t, s, "import time\ntime.sleep(0.5)\nprint(kept)", 10*time.Second) }()
	time.Sleep(200 * time.Millisecond)
	s.mu.Lock()
	ctr := s.ctr
	s.mu.Unlock()
	ctr.wmu.Lock()
	ctr.link.conn.Close()
	ctr.wmu.Unlock()
	res := <-done
	if res.Status != StatusSuccess || res.Stdout != "7\n" {
		t.Fatalf("got %s %q, notice %q", res.Status, res.Stdout, res.Notice)
	}
	want(t, exec1(t, s, "print(kept + 1)", 0), StatusSuccess, "8\n")
}

// TestLaneRefusesAStranger connects to a lane's socket before the runtime
// does, with a wrong token: the lane is given up, the frames stay on the
// stream, and nothing else may connect.
func TestLaneRefusesAStranger(t *testing.T) {
	lanes := newLanes(t)
	ln, err := lanes.open()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.close()
	c, err := netDialUnix(filepath.Join(ln.dir, laneSocket))
	if err != nil {
		t.Fatal(err)
	}
	c.Write(bytes.Repeat([]byte("0"), 2*laneTokenBytes))
	c.Write([]byte("\n"))
	got := <-ln.accepted
	if got.err == nil || got.conn != nil {
		t.Fatalf("a wrong token was accepted: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(ln.dir, laneSocket)); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there after the first connection: %v", err)
	}
	if _, err := netDialUnix(filepath.Join(ln.dir, laneSocket)); err == nil {
		t.Fatal("a second connection was made")
	}
}

// TestLaneProbeFails gives a runtime an offer it cannot reach: the frames
// stay on the stream, and the engine's status says why.
func TestLaneProbeFails(t *testing.T) {
	lanes := newLanes(t)
	s := newLocal(t, Options{Lanes: lanes})
	s.opts.Spec.Image = "" // the local engine ignores the spec; the offer's path is what fails
	// A runtime in sandbox mode takes only engine.LaneDir's socket, which
	// this host has not: emulate it with an offer the runtime refuses.
	lanes.learn("", os.ErrNotExist)
	exec1(t, s, "pass", 0)
	if laneInUse(s) {
		t.Fatal("a lane was used after the probe failed")
	}
	if st := lanes.Status()[""]; st.Path != "stream" || st.Why == "" {
		t.Fatalf("status %+v", st)
	}
}

func netDialUnix(path string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
}

// laneFD is sandbox code that binds lane to a socket object on the
// runtime's lane connection (None when there is none).
const laneFD = `import socket
lane = None
for fd in range(3, 512):
    try:
        sk = socket.socket(fileno=fd)
    except OSError:
        continue
    try:
        if sk.family == socket.AF_UNIX and str(sk.getpeername()).endswith("/sock"):
            lane = sk
            continue
    except OSError:
        pass
    sk.detach()
`

// TestLaneForgedFrames writes frames from sandbox code straight onto the
// runtime's lane: the host trusts them no more than the stream's. A
// result for a call that is not running, a lane frame on the lane and a
// line that is not JSON each stop the sandbox with a protocol violation;
// the call fails saying so, and the next call gets a fresh sandbox with a
// notice.
func TestLaneForgedFrames(t *testing.T) {
	for name, forged := range map[string]string{
		"result of another call": `{"t":"result","id":"999","status":"ok","duration_ms":1,"dropped":{},"killed":0}`,
		"lane frame on the lane": `{"t":"lane","ok":true}`,
		"not JSON":               `hello`,
	} {
		t.Run(name, func(t *testing.T) {
			lanes := newLanes(t)
			s := newLocal(t, Options{Lanes: lanes})
			exec1(t, s, "kept = 1", 0)
			if !laneInUse(s) {
				t.Fatal("no lane")
			}
			res, err := s.Execute(context.Background(), laneFD+"lane.sendall(b'"+forged+"\\n')\nimport time\ntime.sleep(5)", 20*time.Second)
			if err == nil && res.Status == StatusSuccess {
				t.Fatalf("the forged frame went unnoticed: %+v", res)
			}
			if err == nil || !strings.Contains(err.Error(), "protocol violation") {
				t.Fatalf("the call: %+v, %v; want a protocol violation", res, err)
			}
			res = exec1(t, s, "print('kept' in globals())", 0)
			if res.Stdout != "False\n" || res.Notice == "" {
				t.Fatalf("the next call: %+v, want a fresh sandbox with a notice", res)
			}
		})
	}
}

// TestLaneHandsEgressOver: with a lane, a connection of sandbox code to
// the egress endpoint reaches the handler as the sandbox's own TCP
// socket, handed over the lane, not relayed as frames; 16 MiB each way
// come through whole, and a second call's connection too.
func TestLaneHandsEgressOver(t *testing.T) {
	lanes := newLanes(t)
	var kinds sync.Map
	s := newLocal(t, Options{Lanes: lanes, Egress: func(c net.Conn) {
		defer c.Close()
		kinds.Store(fmt.Sprintf("%T", c), true)
		var n [8]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		size := int64(binary.BigEndian.Uint64(n[:]))
		h := sha256.New()
		if _, err := io.CopyN(h, c, size); err != nil {
			return
		}
		c.Write(h.Sum(nil))
		chunk := bytes.Repeat([]byte{'d'}, 1<<20)
		for range size >> 20 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}})
	code := proxyAddr + `
import hashlib
s = socket.create_connection((host, port))
size = 16 << 20
s.sendall(size.to_bytes(8, "big"))
s.sendall(b"u" * size)
digest = b""
while len(digest) < 32:
    digest += s.recv(32 - len(digest))
got = 0
while got < size:
    b = s.recv(1 << 20)
    if not b:
        break
    got += len(b)
s.close()
print(digest == hashlib.sha256(b"u" * size).digest(), got)`
	for range 2 {
		want(t, exec1(t, s, code, 30*time.Second), StatusSuccess, "True 16777216\n")
	}
	if !laneInUse(s) {
		t.Fatal("the lane is not in use")
	}
	if _, ok := kinds.Load("*entrypoint.handedConn"); !ok {
		var got []any
		kinds.Range(func(k, _ any) bool { got = append(got, k); return true })
		t.Fatalf("the handler got %v, not the sandbox's TCP socket", got)
	}
}

// TestLaneForgedDescriptors sends descriptors over the lane from sandbox
// code with forged net_fd frames: a pipe, a UDP socket, and a frame with
// no descriptor each break the protocol; the sandbox is replaced.
func TestLaneForgedDescriptors(t *testing.T) {
	for name, forge := range map[string]string{
		"a pipe":        "r, w = os.pipe()\nlane.sendmsg([b'{\"t\":\"net_fd\"}\\n'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [r]))])",
		"a UDP socket":  "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nlane.sendmsg([b'{\"t\":\"net_fd\"}\\n'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [u.fileno()]))])",
		"no descriptor": "lane.sendall(b'{\"t\":\"net_fd\"}\\n')",
	} {
		t.Run(name, func(t *testing.T) {
			s := newLocal(t, Options{Lanes: newLanes(t), Egress: func(c net.Conn) { c.Close() }})
			exec1(t, s, "kept = 1", 0)
			res, err := s.Execute(context.Background(), laneFD+"import array, os\n"+forge+"\nimport time\ntime.sleep(5)", 20*time.Second)
			if err == nil || !strings.Contains(err.Error(), "protocol violation") {
				t.Fatalf("the call: %+v, %v; want a protocol violation", res, err)
			}
			if res := exec1(t, s, "print('kept' in globals())", 0); res.Stdout != "False\n" {
				t.Fatalf("the next call: %+v", res)
			}
		})
	}
}

// TestLaneImagesRaw: over the lane, images travel raw after their line,
// not in base64, and come out the same; a raw image whose bytes are not
// of its type breaks the protocol.
func TestLaneImagesRaw(t *testing.T) {
	s := newLocal(t, Options{Lanes: newLanes(t)})
	code := fmt.Sprintf("png = bytes.fromhex(%q)\ndisplay(png)\ndisplay(%q.encode())\n",
		fmt.Sprintf("%x", testImages["image/png"]), string(testImages["image/svg+xml"]))
	res := exec1(t, s, code, 0)
	if !laneInUse(s) || len(res.Images) != 2 || !bytes.Equal(res.Images[0].Data, testImages["image/png"]) ||
		!bytes.Equal(res.Images[1].Data, testImages["image/svg+xml"]) {
		t.Fatalf("images over the lane: %+v (lane %v)", res.Images, laneInUse(s))
	}
	for _, tt := range []struct {
		line, payload string
		ok            bool
	}{
		{`{"t":"image","id":"1","mime":"image/png","len":%d}`, string(testImages["image/png"]), true},
		{`{"t":"image","id":"1","mime":"image/png","len":%d}`, "GIF89a not a png", false},
		{`{"t":"file","id":"1","path":"/workspace/out/a.csv","len":%d}`, "a,b\n", true},
	} {
		f, err := parseFrame(fmt.Appendf(nil, tt.line, len(tt.payload)))
		if err == nil {
			if f.NetLen != len(tt.payload) {
				t.Fatalf("%s: len %d", tt.line, f.NetLen)
			}
			f.NetData = []byte(tt.payload)
			err = f.withPayload()
		}
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, errProtocol) {
			t.Errorf("%s with %q: %v, want ok %v", tt.line, tt.payload, err, tt.ok)
		}
	}
	for _, bad := range []string{
		`{"t":"image","id":"1","mime":"image/png","len":0}`,
		`{"t":"image","id":"1","mime":"image/png","len":4,"data":"aGk="}`,
		`{"t":"image","id":"1","mime":"text/html","len":4}`,
		`{"t":"file","id":"1","path":"/etc/passwd","len":4}`,
		`{"t":"file","id":"1","path":"/workspace/out/a","len":16777217}`,
	} {
		if _, err := parseFrame([]byte(bad)); !errors.Is(err, errProtocol) {
			t.Errorf("parseFrame(%s): %v, want a protocol violation", bad, err)
		}
	}
}

// TestLaneHandedSocketStaysNonBlocking: sandbox code hands a socket over
// itself and clears O_NONBLOCK on its copy (the same open file): the
// bridge's reads still honour their deadline, and Close returns.
func TestLaneHandedSocketStaysNonBlocking(t *testing.T) {
	done := make(chan error, 1)
	s := newLocal(t, Options{Lanes: newLanes(t), Egress: func(c net.Conn) {
		time.Sleep(500 * time.Millisecond) // the sandbox clears O_NONBLOCK meanwhile
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		var b [1]byte
		_, err := c.Read(b[:])
		closed := make(chan struct{})
		go func() { c.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(2 * time.Second):
			err = errors.New("Close did not return")
		}
		done <- err
	}})
	res := exec1(t, s, `import fcntl, gc, os, socket, time
lane = [o for o in gc.get_objects() if type(o).__name__ == "Lane" and hasattr(o, "hand_off")][0]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
a = socket.create_connection(srv.getsockname())
b, _ = srv.accept()
handed = lane.hand_off(a, False)
time.sleep(0.2)
fcntl.fcntl(a.fileno(), fcntl.F_SETFL, fcntl.fcntl(a.fileno(), fcntl.F_GETFL) & ~os.O_NONBLOCK)
time.sleep(1.5)
print(handed)`, 20*time.Second)
	want(t, res, StatusSuccess, "True\n")
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the handler's read: %v, want its deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's read blocked past its deadline")
	}
}

// TestLaneStalledRuntimeCannotHangClose: sandbox code points the runtime's
// lane descriptor at a pipe (the runtime stops reading the lane) and
// floods the bridge with RPCs whose results fill the socket: the call
// still ends at its timeout, and Close returns, where a write blocked
// on the lane held the lock Close took.
func TestLaneStalledRuntimeCannotHangClose(t *testing.T) {
	old := laneWriteTimeout
	laneWriteTimeout = time.Second
	t.Cleanup(func() { laneWriteTimeout = old })
	big := strings.Repeat("r", 1<<20)
	s := New(enginetest.Local{T: t}, &Options{Lanes: newLanes(t), InterruptGrace: time.Second,
		RPC: func(context.Context, json.RawMessage) (any, error) { return big, nil }})
	exec1(t, s, "kept = 1", 0)
	done := make(chan error, 1)
	go func() {
		_, err := s.Execute(context.Background(), laneFD+`import os, time
mine = os.dup(lane.fileno())
r, w = os.pipe()
os.dup2(r, lane.fileno())
for i in range(64):
    os.write(mine, b'{"t":"rpc","id":%d,"payload":{}}\n' % (1000 + i))
time.sleep(60)`, 2*time.Second)
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestLaneRootRefusesSharedParents: a lane root under a directory other
// users may write (not sticky) is refused; under a sticky one (/tmp) it
// is made.
func TestLaneRootRefusesSharedParents(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	if _, err := NewLanes(filepath.Join(shared, "lanes"), nil); err == nil || !strings.Contains(err.Error(), "may be changed by another user") {
		t.Fatalf("a root under a world-writable directory: %v", err)
	}
	os.Chmod(shared, 0o777|os.ModeSticky)
	l, err := NewLanes(filepath.Join(shared, "lanes"), nil)
	if err != nil {
		t.Fatalf("a root under a sticky directory: %v", err)
	}
	l.Close()
}
