package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingHost is a TCP host on loopback that reads and counts what each
// connection sends, never answering: what a ClientHello carries upstream.
type countingHost struct {
	ln    net.Listener
	bytes atomic.Int64
	conns atomic.Int64
	wg    sync.WaitGroup
}

func newCountingHost(t *testing.T) *countingHost {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHost{ln: ln}
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
				c.SetDeadline(time.Now().Add(10 * time.Second))
				n, _ := io.Copy(io.Discard, c)
				h.bytes.Add(n)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return h
}

// bigHello opens a tunnel to target through the rig's gateway and sends a
// TLS ClientHello of about 50 KiB (its ALPN list holds 200 long names),
// then closes; it returns the CONNECT's status line.
func bigHello(t *testing.T, r *rig, target string) string {
	t.Helper()
	c, err := net.Dial("tcp", r.proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	if !strings.Contains(line, " 200 ") {
		return strings.TrimSpace(line)
	}
	br.ReadString('\n')
	protos := make([]string, 200)
	for i := range protos {
		protos[i] = fmt.Sprintf("%03d", i) + strings.Repeat("p", 250)
	}
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{InsecureSkipVerify: true, NextProtos: protos})
	tc.SetDeadline(time.Now().Add(time.Second))
	tc.Handshake() // the host never answers: the hello is what counts
	return strings.TrimSpace(line)
}

// TestClientHelloCounted: the ClientHello a tunnel carries to its host
// counts against the call's max_bytes_per_call: of three 50 KiB hellos in
// a 64 KiB call, the host receives the first only; the second passes the
// bound and is not sent, and the call is told.
func TestClientHelloCounted(t *testing.T) {
	host := newCountingHost(t)
	target := host.ln.Addr().String()
	r := newRig(t, fmt.Sprintf(`{"allow": [%q], "max_bytes_per_call": 65536}`, target), nil)
	r.client.BeginCall()
	for range 3 {
		bigHello(t, r, target)
	}
	time.Sleep(200 * time.Millisecond)
	host.ln.Close()
	r.client.Close()
	host.wg.Wait()
	if got := host.bytes.Load(); got > 65536 {
		t.Errorf("the host received %d bytes of ClientHellos in a call bounded to 65536", got)
	}
	if note := r.client.EndCall(); !strings.Contains(note, "max_bytes_per_call (65536)") {
		t.Errorf("the call's notice: %q", note)
	}
}

// TestSpentCallDialsNothing: once a call's bytes reached
// max_bytes_per_call, a new connection is refused with a 403 saying so,
// before anything is resolved or dialled; the next call may connect.
func TestSpentCallDialsNothing(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) }))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	host := newCountingHost(t)
	target := host.ln.Addr().String()
	r := newRig(t, fmt.Sprintf(`{"allow": [%q, %q], "max_bytes_per_call": 65536}`, hp, target), nil)
	r.client.BeginCall()
	if resp, err := r.httpClient(nil).Get(srv.URL + "/big"); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	r.dialer.mu.Lock()
	dials := len(r.dialer.dials)
	r.dialer.mu.Unlock()
	for range 5 {
		if line := bigHello(t, r, target); !strings.HasPrefix(line, "HTTP/1.1 403 ") || !strings.Contains(line, "max_bytes_per_call (65536)") {
			t.Fatalf("a CONNECT once the call's bytes are spent: %q", line)
		}
	}
	if line := r.raw("GET " + srv.URL + "/ HTTP/1.1\r\nHost: " + hp + "\r\n\r\n"); !strings.HasPrefix(line, "HTTP/1.1 403 ") {
		t.Fatalf("a request once the call's bytes are spent: %q", line)
	}
	r.dialer.mu.Lock()
	after := len(r.dialer.dials)
	r.dialer.mu.Unlock()
	if after != dials || host.conns.Load() != 0 {
		t.Errorf("%d dials once the call was spent; the host saw %d connections", after-dials, host.conns.Load())
	}
	if note := r.client.EndCall(); !strings.Contains(note, "max_bytes_per_call") {
		t.Errorf("the call's notice: %q", note)
	}
	r.client.BeginCall()
	resp, err := r.httpClient(nil).Head(srv.URL + "/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the next call's request: %v %v", resp, err)
	}
}
