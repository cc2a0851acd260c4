//go:build integration

package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// helloProbe sends, through the sandbox's proxy, %[2]d TLS ClientHellos
// of about 50 KiB each (an ALPN list of 200 long names: anything code
// wants can ride in a ClientHello) in CONNECT tunnels to %[1]q, and
// prints each CONNECT's answer.
const helloProbe = `import os, socket, ssl, time
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
addr = (proxy[0].split("//")[1], int(proxy[1]))
def hello():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["%%03d" %% i + "p" * 250 for i in range(200)])
    bio_in, bio_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(bio_in, bio_out, server_hostname=None)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return bio_out.read()
data = hello()
answers = []
for i in range(%[2]d):
    s = socket.create_connection(addr, timeout=20)
    s.sendall(("CONNECT %%s HTTP/1.1\r\nHost: %%s\r\n\r\n" %% (%[1]q, %[1]q)).encode())
    line = s.recv(4096).split(b"\r\n")[0].decode("latin-1")
    if " 200 " in line:
        s.sendall(data)
        time.sleep(0.3)
    s.close()
    answers.append(line)
print("hello bytes", len(data))
for a in answers:
    print("answer", a)
`

// TestEgressBudgetHandshakes: a call's bytes through the gateway include
// the ClientHellos its tunnels carry, and once they reach
// max_bytes_per_call no new connection is made: three 50 KiB hellos in a
// 64 KiB call reach their host as one; after a download spent the call,
// five more CONNECTs are refused with a 403 saying why, and the host sees
// no connection; the result's notice says so, and the next call has its
// own budget.
func TestEgressBudgetHandshakes(t *testing.T) {
	forEach(t, withGVisor(engineVariants()), func(t *testing.T, v variant) { checkEgressBudget(t, v.engine, v.env()...) })
}

// helloHost is a TCP host on loopback that counts its connections and
// the bytes they send, never answering.
type helloHost struct {
	ln           net.Listener
	conns, bytes atomic.Int64
	wg           sync.WaitGroup
}

func newHelloHost(t *testing.T) *helloHost {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &helloHost{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.conns.Add(1)
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				n, _ := io.Copy(io.Discard, c)
				h.bytes.Add(n)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return h
}

// settle waits until the host's connections have all ended.
func (h *helloHost) settle() {
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
}

func checkEgressBudget(t *testing.T, name string, more ...string) {
	host := newHelloHost(t)
	target := host.ln.Addr().String()
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 64<<10)
		for range 16 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, fmt.Sprintf(`{"network": {"allow": [%q, %q], "max_bytes_per_call": 65536}}`, target, strings.TrimPrefix(big.URL, "http://")))
	cs := connectBridge(t, name, append([]string{"MCP_BRIDGE_POLICY=" + policy}, more...)...)

	text, _ := runPython(t, cs, map[string]any{"code": fmt.Sprintf(helloProbe, target, 3), "timeout": 90})
	host.settle()
	t.Logf("three hellos:\n%s\nthe host received %d bytes in %d connections", text, host.bytes.Load(), host.conns.Load())
	if !strings.Contains(text, "hello bytes 5") || strings.Count(text, "answer HTTP/1.1 200") < 1 {
		t.Fatalf("the probe: %s", text)
	}
	if got := host.bytes.Load(); got > 65536 {
		t.Errorf("the host received %d bytes of ClientHellos in a call bounded to 65536", got)
	}
	if !strings.Contains(text, "notice: egress: the connection to "+target) || !strings.Contains(text, "max_bytes_per_call (65536)") {
		t.Errorf("the result does not say the call's bytes ran out:\n%s", text)
	}

	conns := host.conns.Load()
	code := fmt.Sprintf(`import urllib.request
try:
    n = len(urllib.request.urlopen(%q, timeout=20).read())
    print("read", n)
except Exception as e:
    print("cut", type(e).__name__)
`, big.URL+"/") + fmt.Sprintf(helloProbe, target, 5)
	text, _ = runPython(t, cs, map[string]any{"code": code, "timeout": 90})
	host.settle()
	t.Logf("spent, then five hellos:\n%s", text)
	if strings.Contains(text, "read 1048576") {
		t.Errorf("1 MiB went through a call bounded to 64 KiB:\n%s", text)
	}
	if n := strings.Count(text, "answer HTTP/1.1 403 "+target+": the call's bytes through the gateway have reached max_bytes_per_call (65536)"); n != 5 {
		t.Errorf("%d of 5 CONNECTs refused once the call was spent:\n%s", n, text)
	}
	if got := host.conns.Load() - conns; got != 0 {
		t.Errorf("the host saw %d connections once the call was spent", got)
	}
	if text, _ := runPython(t, cs, map[string]any{"code": fmt.Sprintf(helloProbe, target, 1)}); !strings.Contains(text, "answer HTTP/1.1 200") || strings.Contains(text, "notice") {
		t.Errorf("the next call: %s", text)
	}
}
