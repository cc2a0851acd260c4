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
	"net/netip"
	"strings"
	"time"
)

// tunnel handles a CONNECT: to a host the policy adds a secret to, the
// gateway speaks TLS on both sides (intercept); to any other, it carries
// the client's TLS end to end after checking that its ClientHello names
// the host of the CONNECT.
func (c *Client) tunnel(conn net.Conn, br *bufio.Reader, req *http.Request, cv *conversation) {
	host, port, err := splitTarget(req.RequestURI, 0)
	if err != nil {
		cv.answer(conn, http.StatusBadRequest, outcomeDenied, err.Error())
		return
	}
	up := c.decideAndDial(conn, host, port, cv)
	if up == nil {
		return
	}
	defer up.Close()
	if cv.network.HasInject(host, port) {
		c.intercept(conn, br, up, host, port, cv)
		return
	}
	conn.SetWriteDeadline(time.Now().Add(headTimeout))
	if _, err := io.WriteString(conn, established); err != nil {
		cv.Outcome, cv.Reason = outcomeError, "answering the CONNECT: "+err.Error()
		return
	}
	conn.SetWriteDeadline(time.Time{})
	conn.SetReadDeadline(time.Now().Add(headTimeout))
	hello, sni, err := readClientHello(br)
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		cv.Outcome, cv.Reason = outcomeDenied, fmt.Sprintf("%s: %v", req.RequestURI, err)
		return
	}
	if why := sniMismatch(host, sni); why != "" {
		cv.Outcome, cv.Reason = outcomeDenied, why
		return
	}
	// The ClientHello is the code's bytes like any other (its extensions
	// can carry tens of kilobytes of anything): the call pays for it.
	if err := c.spend(int64(len(hello)), cv); err != nil {
		cv.Outcome, cv.Reason = outcomeError, err.Error()
		return
	}
	cv.Sent += int64(len(hello))
	if m := c.g.opts.Metrics; m != nil {
		m.Bytes("out", int64(len(hello)))
	}
	up.SetWriteDeadline(time.Now().Add(cv.network.IdleTimeout()))
	if _, err := up.Write(hello); err != nil {
		cv.Outcome, cv.Reason = outcomeError, "writing to the host: "+err.Error()
		return
	}
	c.splice(conn, br, up, cv)
}

// sniMismatch says why a ClientHello's server name does not fit the
// CONNECT host, or "". A name host needs the same name; an IP host takes
// none.
func sniMismatch(host, sni string) string {
	_, isIP := netip.ParseAddr(host)
	switch {
	case isIP == nil && sni == "":
		return ""
	case isIP == nil:
		return fmt.Sprintf("the TLS server name %q is not the CONNECT host %s", sni, host)
	case sni == "":
		return fmt.Sprintf("the TLS ClientHello names no server, the CONNECT host %s is a name", host)
	case !strings.EqualFold(strings.TrimSuffix(sni, "."), strings.TrimSuffix(host, ".")):
		return fmt.Sprintf("the TLS server name %q is not the CONNECT host %s", sni, host)
	}
	return ""
}

// errHelloRead stops the TLS server that reads a ClientHello.
var errHelloRead = errors.New("hello read")

// readClientHello reads the client's first TLS flight up to its
// ClientHello and returns the bytes read, to send on, and the server name
// it asks for. Data that is not a TLS handshake is refused.
func readClientHello(br *bufio.Reader) ([]byte, string, error) {
	rec := &recorder{r: br}
	var sni string
	srv := tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni = h.ServerName
		return nil, errHelloRead
	}})
	err := srv.Handshake()
	if !errors.Is(err, errHelloRead) {
		if rec.buf.Len() > 0 && rec.buf.Bytes()[0] != 0x16 {
			return nil, "", errors.New("the tunnel does not carry TLS: CONNECT carries HTTPS only")
		}
		return nil, "", fmt.Errorf("reading the TLS ClientHello: %v", err)
	}
	return rec.buf.Bytes(), sni, nil
}

// A recorder is a read-only net.Conn over a reader that keeps what was
// read; what a TLS server writes to it is dropped.
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	if r.buf.Len() > maxHeadBytes {
		return 0, errHeadTooLarge
	}
	n, err := r.r.Read(p)
	r.buf.Write(p[:n])
	return n, err
}
func (r *recorder) Write(p []byte) (int, error)      { return len(p), nil }
func (r *recorder) Close() error                     { return nil }
func (r *recorder) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (r *recorder) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (r *recorder) SetDeadline(time.Time) error      { return nil }
func (r *recorder) SetReadDeadline(time.Time) error  { return nil }
func (r *recorder) SetWriteDeadline(time.Time) error { return nil }

// splice copies both ways between the sandbox's conn (read through br)
// and up until either ends, idles past the policy's idle timeout, or the
// call's bytes run out.
func (c *Client) splice(conn net.Conn, br *bufio.Reader, up net.Conn, cv *conversation) {
	done := make(chan error, 2)
	go func() { done <- c.copy(up, br, conn, up, "out", &cv.Sent, cv) }()
	go func() { done <- c.copy(conn, up, up, conn, "in", &cv.Received, cv) }()
	err := <-done
	conn.Close()
	up.Close()
	<-done
	if err != nil && cv.Outcome == "" {
		cv.Outcome, cv.Reason = outcomeError, err.Error()
	}
}

// copy copies src to dst (src's deadlines set on from, dst's on to)
// counting the bytes into *count and against the call; a side idle past
// the policy's idle timeout, reading or written to, ends it; a clean end
// is nil.
func (c *Client) copy(dst io.Writer, src io.Reader, from, to net.Conn, dir string, count *int64, cv *conversation) error {
	buf := make([]byte, copyBuffer)
	idle := cv.network.IdleTimeout()
	for {
		from.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			if berr := c.spend(int64(n), cv); berr != nil {
				return berr
			}
			*count += int64(n)
			if m := c.g.opts.Metrics; m != nil {
				m.Bytes(dir, int64(n))
			}
			to.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				var ne net.Error
				if errors.As(werr, &ne) && ne.Timeout() {
					return fmt.Errorf("not read for %v", idle)
				}
				return nil // the other side ended
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("idle for %v", idle)
			}
			return nil
		}
	}
}
