package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// hopHeaders are the headers of one hop, never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// forward handles a plain HTTP request in absolute form: one request per
// connection, its Host checked against its target, the policy's headers
// added.
func (c *Client) forward(conn net.Conn, req *http.Request, hostHeader string, cv *conversation) {
	if req.URL == nil || !req.URL.IsAbs() {
		cv.answer(conn, http.StatusBadRequest, outcomeDenied, "the request is not in absolute form: the gateway is a proxy (set HTTP_PROXY)")
		return
	}
	if req.URL.Scheme != "http" {
		cv.answer(conn, http.StatusBadRequest, outcomeDenied, fmt.Sprintf("%s:// is not forwarded: HTTPS goes through CONNECT", req.URL.Scheme))
		return
	}
	host, port, err := splitTarget(req.URL.Host, 80)
	if err != nil {
		cv.answer(conn, http.StatusBadRequest, outcomeDenied, err.Error())
		return
	}
	cv.Path = req.URL.Path
	if hostHeader != "" && !sameAuthority(hostHeader, host, port, 80) {
		cv.Host, cv.Port = host, port
		cv.answer(conn, http.StatusForbidden, outcomeDenied, fmt.Sprintf("the Host header %q is not the target %s", hostHeader, req.URL.Host))
		return
	}
	up := c.decideAndDial(conn, host, port, cv)
	if up == nil {
		return
	}
	defer up.Close()
	c.exchange(conn, bufio.NewReader(up), up, req, host, port, cv, true)
}

// sameAuthority reports whether a Host header names host:port (the port
// may be left out when it is def).
func sameAuthority(header, host string, port, def int) bool {
	h, p, err := splitTarget(header, def)
	return err == nil && p == port && strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(host, "."))
}

// exchange sends req to the host on up (its responses read through ubr)
// with the policy's headers, and its response back to conn; last closes
// the connection after it. A method the policy refuses for the host
// (CheckMethod) is answered with a 403.
func (c *Client) exchange(conn net.Conn, ubr *bufio.Reader, up net.Conn, req *http.Request, host string, port int, cv *conversation, last bool) error {
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	if d := cv.network.CheckMethod(host, port, req.Method); !d.Allowed {
		cv.answer(conn, http.StatusForbidden, outcomeDenied, d.Reason+cv.note)
		return errors.New(d.Reason)
	}
	for _, h := range cv.network.Inject(host, port) {
		req.Header.Set(h.Name, h.Value.Reveal())
	}
	req.Close = last
	req.RequestURI = ""
	idle := cv.network.IdleTimeout()
	upw := &meter{c: c, cv: cv, w: up, conn: up, idle: idle, dir: "out", count: &cv.Sent, holdHead: true}
	up.SetWriteDeadline(time.Now().Add(idle))
	err := req.Write(upw)
	if err == nil {
		err = upw.flush()
	}
	if err != nil {
		cv.answer(conn, http.StatusBadGateway, outcomeError, "sending the request: "+err.Error())
		return err
	}
	up.SetReadDeadline(time.Now().Add(idle))
	resp, err := http.ReadResponse(ubr, req)
	if err != nil {
		cv.answer(conn, http.StatusBadGateway, outcomeError, "reading the response: "+err.Error())
		return err
	}
	defer resp.Body.Close()
	if limit := cv.network.MaxBytesPerCall(); resp.ContentLength > 0 && c.callUsed.Load()+resp.ContentLength > limit {
		left := max(limit-c.callUsed.Load(), 0)
		err := c.overBudget(cv, fmt.Sprintf("refused: its response of %d bytes is over the %d left of the call's max_bytes_per_call (%d)", resp.ContentLength, left, limit))
		cv.answer(conn, http.StatusForbidden, outcomeDenied, fmt.Sprintf("%s: the response of %d bytes is over the %d bytes left of the call's max_bytes_per_call (%d)%s",
			net.JoinHostPort(host, strconv.Itoa(port)), resp.ContentLength, left, limit, cv.note))
		return err
	}
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	resp.Close = last
	resp.Body = &idleBody{ReadCloser: resp.Body, conn: up, idle: idle}
	cw := &meter{c: c, cv: cv, w: conn, conn: conn, idle: idle, dir: "in", count: &cv.Received, holdHead: true}
	err = resp.Write(cw)
	if err == nil {
		err = cw.flush()
	}
	if err != nil {
		if cv.Outcome == "" {
			cv.Outcome, cv.Reason = outcomeError, "relaying the response: "+err.Error()
		}
		return err
	}
	return nil
}

// An idleBody reads a response's body, each read within idle.
type idleBody struct {
	io.ReadCloser
	conn net.Conn
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.conn.SetReadDeadline(time.Now().Add(b.idle))
	return b.ReadCloser.Read(p)
}

// A meter counts what is written through it, against the call too; each
// write must go through within idle.
type meter struct {
	c     *Client
	cv    *conversation
	w     io.Writer
	conn  net.Conn // w's connection, for its write deadline
	idle  time.Duration
	dir   string
	count *int64
	// holdHead keeps the writes of a response's head (Response.Write
	// makes several for each header) until its blank line, then writes
	// them at once: a reply crosses the sandbox transport in one frame,
	// not dozens.
	holdHead bool
	head     []byte
}

func (m *meter) Write(p []byte) (int, error) {
	if m.holdHead {
		m.head = append(m.head, p...)
		if !bytes.HasSuffix(m.head, []byte("\r\n\r\n")) && len(m.head) < maxHeadBytes {
			return len(p), nil
		}
		head := m.head
		m.holdHead, m.head = false, nil
		if _, err := m.write(head); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return m.write(p)
}

// flush writes a head still held (one cut short of its blank line).
func (m *meter) flush() error {
	if len(m.head) == 0 {
		return nil
	}
	head := m.head
	m.holdHead, m.head = false, nil
	_, err := m.write(head)
	return err
}

func (m *meter) write(p []byte) (int, error) {
	if err := m.c.spend(int64(len(p)), m.cv); err != nil {
		m.cv.Outcome, m.cv.Reason = outcomeError, err.Error()
		return 0, err
	}
	*m.count += int64(len(p))
	if mm := m.c.g.opts.Metrics; mm != nil {
		mm.Bytes(m.dir, int64(len(p)))
	}
	m.conn.SetWriteDeadline(time.Now().Add(m.idle))
	return m.w.Write(p)
}

// ReadFrom copies r through Write in reads of up to copyBuffer bytes, so
// a relayed body moves in the transport's largest frames, each written as
// soon as it is read.
func (m *meter) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, copyBuffer)
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := m.Write(buf[:n]); werr != nil {
				return total, werr
			}
			total += int64(n)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// intercept serves a tunnel to a host the policy adds a secret to: TLS
// with the sandbox under a certificate of the gateway's CA, TLS with the
// host verified against the roots, and each request forwarded with the
// policy's headers.
func (c *Client) intercept(conn net.Conn, br *bufio.Reader, up net.Conn, host string, port int, cv *conversation) {
	conn.SetWriteDeadline(time.Now().Add(headTimeout))
	if _, err := io.WriteString(conn, established); err != nil {
		cv.Outcome, cv.Reason = outcomeError, "answering the CONNECT: "+err.Error()
		return
	}
	conn.SetWriteDeadline(time.Time{})
	cert, err := c.g.opts.CA.leaf(host)
	if err != nil {
		cv.Outcome, cv.Reason = outcomeError, err.Error()
		return
	}
	in := tls.Server(&bufferedConn{Conn: conn, r: br}, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	in.SetDeadline(time.Now().Add(headTimeout))
	if err := in.Handshake(); err != nil {
		cv.Outcome, cv.Reason = outcomeError, "TLS with the sandbox: "+err.Error()
		return
	}
	in.SetDeadline(time.Time{})
	out := tls.Client(up, &tls.Config{ServerName: host, RootCAs: c.g.opts.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	out.SetDeadline(time.Now().Add(cv.network.ConnectTimeout()))
	if err := out.Handshake(); err != nil {
		cv.Outcome, cv.Reason = outcomeError, fmt.Sprintf("TLS with %s: %v", net.JoinHostPort(host, strconv.Itoa(port)), err)
		in.Close()
		return
	}
	out.SetDeadline(time.Time{})
	defer in.Close()
	lim := &headLimit{r: in}
	ibr, obr := bufio.NewReader(lim), bufio.NewReader(out)
	for first := true; ; first = false {
		in.SetReadDeadline(time.Now().Add(cv.network.IdleTimeout()))
		lim.left = maxHeadBytes
		lim.head.Reset()
		req, _, err := readRequest(ibr, lim)
		if err != nil {
			if !first && (errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF")) {
				return
			}
			if !errors.Is(err, io.EOF) {
				cv.answer(in, http.StatusBadRequest, outcomeDenied, err.Error())
			}
			return
		}
		in.SetReadDeadline(time.Time{})
		if first {
			cv.Method, cv.Path = req.Method, req.URL.Path
		}
		if !sameAuthority(req.Host, host, port, 443) {
			cv.answer(in, http.StatusForbidden, outcomeDenied, fmt.Sprintf("the Host header %q is not the CONNECT host %s", req.Host, host))
			return
		}
		if c.exchange(in, obr, out, req, host, port, cv, req.Close) != nil || req.Close {
			return
		}
	}
}

// A bufferedConn is a net.Conn read through a bufio.Reader holding bytes
// already read from it.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
