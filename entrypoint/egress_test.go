package entrypoint

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// proxyAddr is sandbox code that sets host and port to the endpoint
// HTTP_PROXY names.
const proxyAddr = `import os, socket, urllib.parse
_u = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
host, port = _u.hostname, _u.port
`

// within fails the test unless ch yields within 10 s (a generous bound:
// a hang, not a speed, is what it catches).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
		panic("unreachable")
	}
}

// TestEgressEchoAndEnvironment: a raw socket to the endpoint HTTP_PROXY
// names reaches the handler, which echoes; the proxy and CA variables
// are set and the bundle ends with the given CA.
func TestEgressEchoAndEnvironment(t *testing.T) {
	const ca = "-----BEGIN CERTIFICATE-----\nTUNQIHRlc3QgQ0E=\n-----END CERTIFICATE-----\n"
	s := newLocal(t, Options{EgressCA: []byte(ca), Egress: func(c net.Conn) {
		defer c.Close()
		io.Copy(c, c)
	}})
	res := exec1(t, s, proxyAddr+`
s = socket.create_connection((host, port))
s.sendall(b"hello, gateway")
got = b""
while len(got) < 14:
    got += s.recv(100)
s.close()
print(got.decode())
url = os.environ["HTTP_PROXY"]
print(all(os.environ[v] == url for v in ("HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")), host)
print("NO_PROXY" in os.environ or "no_proxy" in os.environ)
bundle = os.environ["SSL_CERT_FILE"]
print(all(os.environ[v] == bundle for v in ("REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE")), bundle)
print(open(bundle).read().endswith(`+fmt.Sprintf("%q", ca)+`))
`, 30*time.Second)
	want(t, res, StatusSuccess, "hello, gateway\nTrue 127.0.0.1\nFalse\nTrue /tmp/mcp-egress/ca-bundle.pem\nTrue\n")
}

// TestEgressOffWithoutHandler: without Options.Egress the sandbox has no
// endpoint: the proxy variable is not one of ours.
func TestEgressOffWithoutHandler(t *testing.T) {
	s := newLocal(t, Options{})
	res := exec1(t, s, "import os\nprint(os.environ.get('HTTP_PROXY', '').startswith('http://127.0.0.1:'))", 0)
	want(t, res, StatusSuccess, "False\n")
}

// TestEgressURLLib: urllib sends its request to the endpoint in absolute
// form, and the handler's response comes back as the body.
func TestEgressURLLib(t *testing.T) {
	requests := make(chan string, 1)
	s := newLocal(t, Options{Egress: func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			requests <- "error: " + err.Error()
			return
		}
		requests <- req.Method + " " + req.RequestURI
		body := "hello from the gateway"
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	}})
	res := exec1(t, s, `import urllib.request
with urllib.request.urlopen("http://127.0.0.1:9/x", timeout=20) as r:
    print(r.status, r.read().decode())
`, 30*time.Second)
	want(t, res, StatusSuccess, "200 hello from the gateway\n")
	if got := within(t, requests, "request"); got != "GET http://127.0.0.1:9/x" {
		t.Fatalf("the handler saw %q, want an absolute-form GET", got)
	}
}

// TestEgressLargeTransferBothWays moves 20 MiB each way at once, byte
// exact: the flow control neither loses, reorders nor deadlocks.
func TestEgressLargeTransferBothWays(t *testing.T) {
	const size = 20 << 20
	out := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(out)
	sum := sha256.Sum256(out)
	received := make(chan string, 1)
	s := newLocal(t, Options{Egress: func(c net.Conn) {
		defer c.Close()
		wrote := make(chan error, 1)
		go func() {
			_, err := c.Write(out)
			wrote <- err
		}()
		h := sha256.New()
		n, err := io.CopyN(h, c, size)
		if err := <-wrote; err != nil {
			received <- "write: " + err.Error()
			return
		}
		received <- fmt.Sprintf("%d %x %v", n, h.Sum(nil), err)
	}})
	res := exec1(t, s, proxyAddr+`import hashlib, random
data = random.Random(7).randbytes(20 << 20)
s = socket.create_connection((host, port))
s.sendall(data)
h, n = hashlib.sha256(), 0
while n < len(data):
    b = s.recv(1 << 16)
    if not b:
        break
    h.update(b)
    n += len(b)
s.close()
print(n, h.hexdigest())
print(hashlib.sha256(data).hexdigest())
`, 180*time.Second)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.Status != StatusSuccess || len(lines) != 2 {
		t.Fatalf("status %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	if want := fmt.Sprintf("%d %s", size, hex.EncodeToString(sum[:])); lines[0] != want {
		t.Fatalf("the sandbox received %q, want %q", lines[0], want)
	}
	if got, want := within(t, received, "handler report"), fmt.Sprintf("%d %s <nil>", size, lines[1]); got != want {
		t.Fatalf("the handler received %q, want %q", got, want)
	}
}

// TestEgressStalledReader: the handler writes 10 MiB to a connection
// whose code never reads (its write deadline ends the first Write); calls,
// interrupts and RPCs go on, and the code closing its socket fails the
// blocked Write.
func TestEgressStalledReader(t *testing.T) {
	writeErr := make(chan error, 1)
	s := newLocal(t, Options{
		RPC: func(ctx context.Context, payload json.RawMessage) (any, error) { return "pong", nil },
		Egress: func(c net.Conn) {
			defer c.Close()
			c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			n, err := c.Write(make([]byte, 10<<20))
			if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 10<<20 {
				writeErr <- fmt.Errorf("a Write past its deadline: %d bytes, %v", n, err)
				return
			}
			c.SetWriteDeadline(time.Time{})
			_, err = c.Write(make([]byte, 10<<20-n))
			writeErr <- err
		},
	})
	exec1(t, s, proxyAddr+"stalled = socket.create_connection((host, port))\nstalled.send(b'x')", 30*time.Second)
	for i := range 20 {
		want(t, exec1(t, s, fmt.Sprintf("print(%d * 2)", i), 10*time.Second), StatusSuccess, fmt.Sprintf("%d\n", i*2))
	}
	res := exec1(t, s, "import mcp_sandbox_runtime as rt\nprint(rt.rpc_sync({'ping': 1}))", 10*time.Second)
	want(t, res, StatusSuccess, "pong\n")
	res = exec1(t, s, "kept = 1\nwhile True: pass", 500*time.Millisecond)
	if res.Status != StatusTimeout || res.StateLost {
		t.Fatalf("the interrupted call: %+v", res)
	}
	select {
	case err := <-writeErr:
		t.Fatalf("the stalled Write returned early: %v", err)
	default:
	}
	want(t, exec1(t, s, "stalled.close()\nprint(kept)", 10*time.Second), StatusSuccess, "1\n")
	if err := within(t, writeErr, "Write error"); !errors.Is(err, errEgressClosed) {
		t.Fatalf("Write after the sandbox closed: %v, want errEgressClosed", err)
	}
}

// TestEgressManyConnections opens 300 connections at once: 256 reach the
// handler, the rest are closed at once, and calls and new connections
// work on.
func TestEgressManyConnections(t *testing.T) {
	var opened, ended atomic.Int64
	s := newLocal(t, Options{Egress: func(c net.Conn) {
		defer c.Close()
		opened.Add(1)
		c.Write([]byte("k"))
		b := make([]byte, 16)
		for {
			n, err := c.Read(b)
			if err != nil {
				ended.Add(1)
				return
			}
			c.Write(b[:n])
		}
	}})
	res := exec1(t, s, proxyAddr+`socks = [socket.create_connection((host, port)) for _ in range(300)]
got = {}
for so in socks:
    so.settimeout(20)
    b = so.recv(1)
    got[b] = got.get(b, 0) + 1
print(got.get(b"k", 0), got.get(b"", 0))
for so in socks:
    so.close()
`, 60*time.Second)
	want(t, res, StatusSuccess, fmt.Sprintf("%d %d\n", maxEgressConns, 300-maxEgressConns))
	deadline := time.Now().Add(10 * time.Second)
	for ended.Load() < maxEgressConns && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if o, e := opened.Load(), ended.Load(); o != maxEgressConns || e != maxEgressConns {
		t.Fatalf("the handler saw %d connections open and %d end, want %d", o, e, maxEgressConns)
	}
	res = exec1(t, s, proxyAddr+`so = socket.create_connection((host, port))
so.sendall(b"again")
b = b""
while len(b) < 6:
    b += so.recv(16)
so.close()
print(b.decode())
`, 30*time.Second)
	want(t, res, StatusSuccess, "kagain\n")
}

// TestEgressOutOfDescriptors: sandbox code holds every descriptor but the
// one its socket takes, so the connection it opens waits in the
// endpoint's backlog with no descriptor to be accepted into: it is closed
// at once (the flood of TestEgressHostile, under load, left connections
// silent there until others ended), the handler never sees it, and once
// descriptors are free again connections reach the handler.
func TestEgressOutOfDescriptors(t *testing.T) {
	opened := make(chan struct{}, 16)
	s := newLocal(t, Options{Egress: func(c net.Conn) {
		defer c.Close()
		opened <- struct{}{}
		c.Write([]byte("k"))
	}})
	res := exec1(t, s, proxyAddr+`import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 32, hard))
fill = []
try:
    while True:
        fill.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
os.close(fill.pop())
c = socket.socket()
c.connect((host, port))
c.settimeout(20)  # a hang, not a speed, is what it catches
try:
    got = c.recv(1)
except socket.timeout:
    got = "silent"
c.close()
for fd in fill:
    os.close(fd)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
print(got)
`, 60*time.Second)
	want(t, res, StatusSuccess, "b''\n")
	select {
	case <-opened:
		t.Fatal("the handler saw the connection that found no descriptor")
	default:
	}
	res = exec1(t, s, proxyAddr+"c = socket.create_connection((host, port))\nprint(c.recv(1))\nc.close()", 30*time.Second)
	want(t, res, StatusSuccess, "b'k'\n")
}

// TestEgressHostCloseAndDeadlines: bytes written before the handler's
// Close arrive, then EOF; a read deadline ends a Read; Read and Write
// after Close fail.
func TestEgressHostCloseAndDeadlines(t *testing.T) {
	report := make(chan string, 1)
	s := newLocal(t, Options{Egress: func(c net.Conn) {
		var r []string
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		r = append(r, fmt.Sprint(errors.Is(err, os.ErrDeadlineExceeded)))
		c.SetReadDeadline(time.Time{})
		c.Write([]byte("ready"))
		b := make([]byte, 4)
		_, err = io.ReadFull(c, b)
		r = append(r, string(b), fmt.Sprint(err))
		c.Write(make([]byte, 1<<20))
		c.Write([]byte("bye"))
		r = append(r, fmt.Sprint(c.Close()))
		_, rerr := c.Read(b)
		_, werr := c.Write(b)
		r = append(r, fmt.Sprint(errors.Is(rerr, net.ErrClosed), errors.Is(werr, net.ErrClosed), c.Close() != nil))
		report <- strings.Join(r, " ")
	}})
	res := exec1(t, s, proxyAddr+`so = socket.create_connection((host, port))
assert so.recv(5) == b"ready"
so.sendall(b"ping")
data = b""
while True:
    b = so.recv(1 << 16)
    if not b:
        break
    data += b
so.close()
print(len(data), data[-3:])
`, 30*time.Second)
	want(t, res, StatusSuccess, fmt.Sprintf("%d b'bye'\n", 1<<20+3))
	if got := within(t, report, "handler report"); got != "true ping <nil> <nil> true true true" {
		t.Fatalf("handler report %q", got)
	}
}

// TestEgressSandboxDeathFailsConns: the handler's Read and Write fail
// when the sandbox dies, and the next sandbox has a working endpoint.
func TestEgressSandboxDeathFailsConns(t *testing.T) {
	errs := make(chan [2]error, 2)
	s := newLocal(t, Options{Egress: func(c net.Conn) {
		defer c.Close()
		b := make([]byte, 16)
		n, err := c.Read(b)
		if err == nil {
			c.Write(b[:n])
			_, err = c.Read(b)
		}
		_, werr := c.Write([]byte("x"))
		errs <- [2]error{err, werr}
	}})
	exec1(t, s, proxyAddr+"held = socket.create_connection((host, port))", 30*time.Second)
	_, err := s.Execute(context.Background(), "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 10*time.Second)
	if !errors.Is(err, ErrSandboxDied) {
		t.Fatalf("err = %v, want ErrSandboxDied", err)
	}
	got := within(t, errs, "Read error")
	if !errors.Is(got[0], ErrSandboxDied) || !errors.Is(got[1], ErrSandboxDied) {
		t.Fatalf("Read and Write on a dead sandbox's connection: %v, %v; want ErrSandboxDied", got[0], got[1])
	}
	res := exec1(t, s, proxyAddr+`so = socket.create_connection((host, port))
so.sendall(b"new")
print(so.recv(16).decode())
`, 30*time.Second)
	want(t, res, StatusSuccess, "new\n")
	if !res.StateLost {
		t.Fatal("no state-lost notice after the death")
	}
}

// TestEgressViolations: a sandbox that sends past its credit, for a
// connection it never opened or did close, or reopens an id, breaks the
// protocol; bytes for a connection the host just closed are ignored.
func TestEgressViolations(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ctr := &container{log: slog.New(slog.DiscardHandler), ctx: ctx, cancel: cancel, dead: make(chan struct{})}
	ctr.fault(errors.New("no stdin in this test")) // sends fail; state is still kept
	handled := make(chan net.Conn, 8)
	eg := &egress{ctr: ctr, handler: func(c net.Conn) { handled <- c }, conns: map[int64]*egressConn{}, severed: -1}
	data := func(cid int64, n int) frame { return frame{T: frameNetData, CID: cid, NetData: make([]byte, n)} }
	mustBe := func(f frame, bad bool) {
		t.Helper()
		err := eg.dispatch(f)
		if bad != errors.Is(err, errProtocol) || !bad && err != nil {
			t.Fatalf("dispatch(%s %d): %v, want violation %v", f.T, f.CID, err, bad)
		}
	}
	mustBe(frame{T: frameNetOpen, CID: 1}, false)
	mustBe(frame{T: frameNetOpen, CID: 1}, true)
	mustBe(data(2, 10), true)
	for range egressUpWindow / egressChunk {
		mustBe(data(1, egressChunk), false)
	}
	mustBe(data(1, 1), true)
	mustBe(frame{T: frameNetAck, CID: 1, NetN: 1}, true) // nothing was sent
	c := within(t, handled, "connection")
	c.Close()
	mustBe(data(1, egressChunk), false) // in flight after the host's close
	mustBe(frame{T: frameNetClose, CID: 1}, false)
	mustBe(data(1, 1), true) // after the sandbox's own close
	mustBe(frame{T: frameNetClose, CID: 1}, true)
	mustBe(frame{T: frameNetOpen, CID: 0}, true) // ids only grow
	var none *egress
	if err := none.dispatch(frame{T: frameNetOpen, CID: 5}); !errors.Is(err, errProtocol) {
		t.Fatalf("a net_open without egress: %v", err)
	}
}

// TestParseNetFrames: the net_* frames' members are checked strictly.
func TestParseNetFrames(t *testing.T) {
	for _, line := range []string{
		`{"t":"net_open"}`, `{"t":"net_open","cid":-1}`, `{"t":"net_open","cid":9007199254740993}`,
		`{"t":"net_open","cid":1.5}`, `{"t":"net_close","cid":"1"}`,
		`{"t":"net_data","cid":1}`, `{"t":"net_data","cid":1,"len":0}`, `{"t":"net_data","cid":1,"len":"2"}`,
		`{"t":"net_data","cid":1,"len":` + strconv.Itoa(egressChunk+1) + `}`, `{"t":"net_data","cid":1,"len":-1}`,
		`{"t":"net_close","cid":1,"len":4}`, `{"t":"out","id":"1","stream":"stdout","data":"x","len":1}`,
		`{"t":"net_ack","cid":1}`, `{"t":"net_ack","cid":1,"n":0}`,
		`{"t":"net_ack","cid":1,"n":` + strconv.Itoa(egressDownWindow+1) + `}`,
	} {
		if _, err := parseFrame([]byte(line)); !errors.Is(err, errProtocol) {
			t.Errorf("parseFrame(%.60s): %v; want a violation", line, err)
		}
	}
	f, err := parseFrame([]byte(`{"t":"net_data","cid":3,"len":2}`))
	if err != nil || f.CID != 3 || f.NetLen != 2 || f.NetData != nil {
		t.Fatalf("net_data: %+v, %v", f, err)
	}
	f, err = parseFrame([]byte(`{"t":"net_ack","cid":0,"n":` + strconv.Itoa(egressDownWindow) + `}`))
	if err != nil || f.CID != 0 || f.NetN != egressDownWindow {
		t.Fatalf("net_ack: %+v, %v", f, err)
	}
}
