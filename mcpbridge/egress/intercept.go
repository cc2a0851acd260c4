package egress

import (
	"bufio"
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
		if !c.interceptOne(in, ibr, lim, out, obr, host, port, cv, first) {
			return
		}
	}
}

// interceptOne reads one request of an intercepted tunnel and relays it
// and its answer, with its own egress record (so that every request of
// the tunnel is audited, not its first only); it reports whether the
// tunnel may carry another.
func (c *Client) interceptOne(in *tls.Conn, ibr *bufio.Reader, lim *headLimit, out net.Conn, obr *bufio.Reader, host string, port int, cv *conversation, first bool) bool {
	rq := cv.request()
	in.SetReadDeadline(time.Now().Add(cv.network.IdleTimeout()))
	lim.left = maxHeadBytes
	lim.head.Reset()
	req, _, err := readRequest(ibr, lim)
	if err != nil {
		if errors.Is(err, io.EOF) || !first && (lim.head.Len() == 0 || strings.Contains(err.Error(), "EOF")) {
			return false // the client is done, or sent nothing more before the idle timeout
		}
		rq.answer(in, http.StatusBadRequest, outcomeDenied, err.Error())
		c.recordRequest(cv, rq)
		return false
	}
	in.SetReadDeadline(time.Time{})
	rq.Method, rq.Path = req.Method, req.URL.Path
	if !sameAuthority(req.Host, host, port, 443) {
		rq.answer(in, http.StatusForbidden, outcomeDenied, fmt.Sprintf("the Host header %q is not the CONNECT host %s", req.Host, host))
		c.recordRequest(cv, rq)
		return false
	}
	err = c.exchange(in, obr, out, req, host, port, rq, req.Close)
	c.recordRequest(cv, rq)
	return err == nil && !req.Close
}

// recordRequest writes the record of rq, a request of the intercepted
// connection cv, and adds its counts to cv's.
func (c *Client) recordRequest(cv, rq *conversation) {
	c.record(rq)
	cv.requests = true
	cv.Sent += rq.Sent
	cv.Received += rq.Received
	if rq.Outcome != outcomeAllowed {
		cv.Outcome, cv.Reason = rq.Outcome, rq.Reason
	}
}

// A bufferedConn is a net.Conn read through a bufio.Reader holding bytes
// already read from it.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
