package egress

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
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

// exchange sends req to the host on up (its responses read through ubr)
// with the policy's headers, and its response back to conn; last closes
// the connection after it. To a host the policy adds a secret to, a
// method that would echo it is refused, and the answer is asked for whole
// and unencoded, and relayed with the secret masked (secret.go).
func (c *Client) exchange(conn net.Conn, ubr *bufio.Reader, up net.Conn, req *http.Request, host string, port int, cv *conversation, last bool) error {
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	target := net.JoinHostPort(host, strconv.Itoa(port))
	if d := cv.network.CheckMethod(host, port, req.Method); !d.Allowed {
		cv.answer(conn, http.StatusForbidden, outcomeDenied, d.Reason+cv.note)
		return errors.New(d.Reason)
	}
	inject := cv.network.Inject(host, port)
	if len(inject) > 0 {
		cv.mask = askWhole(req, cv.network.Masks(host, port))
	}
	for _, h := range inject {
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
	if cv.mask != nil {
		if why := encodedBody(req, resp); why != "" {
			cv.answer(conn, http.StatusBadGateway, outcomeError, target+": "+why)
			return errors.New(why)
		}
	}
	if limit := cv.network.MaxBytesPerCall(); resp.ContentLength > 0 && c.callUsed.Load()+resp.ContentLength > limit {
		left := max(limit-c.callUsed.Load(), 0)
		err := c.overBudget(cv, fmt.Sprintf("refused: its response of %d bytes is over the %d left of the call's max_bytes_per_call (%d)", resp.ContentLength, left, limit))
		cv.answer(conn, http.StatusForbidden, outcomeDenied, fmt.Sprintf("%s: the response of %d bytes is over the %d bytes left of the call's max_bytes_per_call (%d)%s",
			target, resp.ContentLength, left, limit, cv.note))
		return err
	}
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	resp.Close = last
	resp.Body = &idleBody{ReadCloser: resp.Body, conn: up, idle: idle}
	if cv.mask != nil {
		maskAnswer(cv.mask, resp, &cv.Masked)
	}
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
