package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// Outcomes of a connection, in records and metrics.
const (
	outcomeAllowed = "allowed"
	outcomeDenied  = "denied"
	outcomeError   = "error"
)

// A conversation is what the gateway learns of one connection, for its
// record.
type conversation struct {
	audit.Egress
	network *policy.Network
	note    string  // which policy file, for refusals: " (in NAME)"
	mask    *masker // the secrets its answers must not show; nil: none
	// requests says its requests were recorded each on its own (an
	// intercepted tunnel's): the connection has no record of its own.
	requests bool
}

// request returns a conversation for one request of the connection cv:
// its target and policy, its own counts, method, path and outcome.
func (cv *conversation) request() *conversation {
	rq := &conversation{network: cv.network, note: cv.note}
	rq.Began, rq.Session = time.Now(), cv.Session
	rq.Host, rq.Port, rq.Address, rq.Rule = cv.Host, cv.Port, cv.Address, cv.Rule
	return rq
}

// Serve handles one connection sandbox code opened to its proxy
// endpoint: a CONNECT (a tunnel) or a request in absolute form (plain
// HTTP), decided by the network policy in force; it closes conn.
func (c *Client) Serve(conn net.Conn) {
	defer conn.Close()
	defer c.track(conn)()
	cv := &conversation{Egress: audit.Egress{Began: time.Now(), Session: c.session}}
	defer c.finish(cv)
	p, perr := c.g.opts.Policy()
	var n *policy.Network
	if perr == nil {
		n, perr = c.networkOf(p)
	}
	if perr == nil {
		cv.network, cv.note = n, p.SourceNote()
		if open := c.open.Add(1); open > int64(n.MaxConnections()) {
			c.open.Add(-1) // a refused connection holds no place
			cv.answer(conn, http.StatusTooManyRequests, outcomeDenied, fmt.Sprintf("too many connections: the network policy allows %d at once", n.MaxConnections()))
			return
		}
		defer c.open.Add(-1)
	}
	conn.SetReadDeadline(time.Now().Add(headTimeout))
	lim := &headLimit{r: conn, left: maxHeadBytes}
	br := bufio.NewReaderSize(lim, 16<<10)
	req, hostHeader, err := readRequest(br, lim)
	if err != nil {
		cv.Outcome, cv.Reason = outcomeDenied, err.Error()
		status := http.StatusBadRequest
		if errors.Is(err, errHeadTooLarge) {
			status = http.StatusRequestHeaderFieldsTooLarge
		}
		refuse(conn, status, cv.Reason)
		return
	}
	conn.SetReadDeadline(time.Time{})
	cv.Method = req.Method
	if perr != nil {
		cv.answer(conn, http.StatusForbidden, outcomeDenied, perr.Error())
		return
	}
	if req.Method == http.MethodConnect {
		c.tunnel(conn, br, req, cv)
		return
	}
	c.forward(conn, req, hostHeader, cv)
}

// networkOf returns the network the client's connections get under p:
// its network section's, or an install client's (see NewInstallClient).
func (c *Client) networkOf(p *policy.Policy) (*policy.Network, error) {
	if c.install == nil {
		return p.Network(), nil
	}
	n, err := p.InstallNetwork(*c.install)
	if err != nil {
		return nil, fmt.Errorf("the package install hosts: %w", err)
	}
	return n, nil
}

// answer refuses the connection conn with status and why, and records
// the outcome (denied, or error where the gateway failed). A secret the
// host's answer quoted (in an error the gateway reports) is masked.
func (cv *conversation) answer(conn net.Conn, status int, outcome, why string) {
	if cv.mask != nil {
		var n int
		why, n = cv.mask.maskString(why)
		cv.Masked += int64(n)
	}
	cv.Outcome, cv.Reason = outcome, why
	refuse(conn, status, why)
}

// finish counts the connection cv and writes its record, unless its
// requests were recorded each on its own.
func (c *Client) finish(cv *conversation) {
	if cv.Outcome == "" {
		cv.Outcome = outcomeAllowed
	}
	if m := c.g.opts.Metrics; m != nil {
		m.Connection(cv.Outcome)
	}
	if !cv.requests {
		c.record(cv)
	}
}

// record writes the egress record of cv, a connection or one of its
// requests, and logs it when it was refused or failed.
func (c *Client) record(cv *conversation) {
	if cv.Outcome == "" {
		cv.Outcome = outcomeAllowed
	}
	c.g.opts.Audit.Egress(cv.Egress)
	if cv.Outcome != outcomeAllowed {
		c.g.log.Info("egress refused", "session", c.session, "host", cv.Host, "port", cv.Port, "method", cv.Method, "outcome", cv.Outcome, "reason", cv.Reason)
	}
}

// errHeadTooLarge reports a request line and headers over maxHeadBytes.
var errHeadTooLarge = fmt.Errorf("request line and headers over %d bytes", maxHeadBytes)

// A headLimit reads at most left bytes while a request's head is read,
// then any number.
type headLimit struct {
	r    io.Reader
	left int64 // < 0: no limit
	head bytes.Buffer
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.head.Write(p[:n])
	return n, err
}

// readRequest reads a request's head from br (lim bounding it) and
// returns the request and the Host header as the client sent it.
func readRequest(br *bufio.Reader, lim *headLimit) (*http.Request, string, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) || lim.left == 0 {
			return nil, "", errHeadTooLarge
		}
		return nil, "", fmt.Errorf("reading the request: %v", err)
	}
	// ReadRequest takes an absolute URL's host over the Host header:
	// the header as sent is read from the head itself.
	raw := lim.head.Bytes()
	lim.left = -1
	defer lim.head.Reset()
	host := ""
	if end := bytes.Index(raw, []byte("\r\n\r\n")); end >= 0 {
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw[:end+4])))
		tp.ReadLine() // the request line
		if h, err := tp.ReadMIMEHeader(); err == nil {
			host = h.Get("Host")
		}
	}
	return req, host, nil
}

// refuse answers conn with status and why, in the reason phrase and the
// body alike (clients such as urllib show the phrase).
func refuse(conn net.Conn, status int, why string) {
	phrase := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, why)
	body := phrase + "\n"
	conn.SetWriteDeadline(time.Now().Add(headTimeout))
	fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, phrase, len(body), body)
}

// splitTarget splits "host:port" (IPv6 in brackets); defPort is used
// when there is no port and defPort > 0.
func splitTarget(hostport string, defPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort > 0 && !strings.Contains(strings.Trim(hostport, "[]"), ":") {
			return strings.ToLower(hostport), defPort, nil
		}
		if defPort > 0 && strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
			return hostport[1 : len(hostport)-1], defPort, nil
		}
		return "", 0, fmt.Errorf("the target %q is not host:port", hostport)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("the target %q has no valid port", hostport)
	}
	if host == "" {
		return "", 0, fmt.Errorf("the target %q has no host", hostport)
	}
	return strings.ToLower(host), port, nil
}

// A refusal is a decision against a connection.
type refusal struct {
	status int
	why    string
	rule   string
}

func (r *refusal) Error() string { return r.why }

// resolve decides whether host:port may be reached and returns the
// addresses to dial, each checked; a refusal says why not.
func (c *Client) resolve(n *policy.Network, host string, port int) ([]netip.Addr, string, error) {
	target := net.JoinHostPort(host, strconv.Itoa(port))
	d := n.CheckName(host, port)
	if !d.Allowed {
		return nil, d.Rule, &refusal{http.StatusForbidden, naming(target, d.Reason), d.Rule}
	}
	var addrs []netip.Addr
	literal := false
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs, literal = []netip.Addr{ip}, true
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), n.ConnectTimeout())
		defer cancel()
		addrs, err = c.g.opts.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, d.Rule, &refusal{http.StatusBadGateway, fmt.Sprintf("%s: resolving %s: %v", target, host, err), d.Rule}
		}
	}
	for i, a := range addrs {
		if !literal {
			a = a.Unmap() // a resolver's IPv4-mapped answer is the IPv4 address
			addrs[i] = a
		}
		if ad := n.CheckAddr(host, port, a); !ad.Allowed {
			return nil, ad.Rule, &refusal{http.StatusForbidden, naming(fmt.Sprintf("%s (%s)", target, a), ad.Reason), ad.Rule}
		}
	}
	return addrs, d.Rule, nil
}

// naming returns why, beginning with target unless it does.
func naming(target, why string) string {
	if strings.HasPrefix(why, target) {
		return why
	}
	return target + ": " + why
}

// dial connects to the first of addrs that answers within the policy's
// connect timeout.
func (c *Client) dial(n *policy.Network, addrs []netip.Addr, port int) (net.Conn, netip.AddrPort, error) {
	var last error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		ctx, cancel := context.WithTimeout(context.Background(), n.ConnectTimeout())
		up, err := c.g.opts.Dialer.DialContext(ctx, "tcp", ap.String())
		cancel()
		if err == nil {
			return up, ap, nil
		}
		last = err
	}
	return nil, netip.AddrPort{}, fmt.Errorf("connecting: %v", last)
}

// decideAndDial resolves and dials host:port for cv, recording what it
// learns; on failure it answers conn and returns nil. Once the call's
// bytes have reached max_bytes_per_call no connection is made.
func (c *Client) decideAndDial(conn net.Conn, host string, port int, cv *conversation) net.Conn {
	cv.Host, cv.Port = host, port
	if limit := cv.network.MaxBytesPerCall(); c.callUsed.Load() >= limit {
		// Spent: a connection made now could carry what its handshake
		// and head hold before any byte is counted against the call.
		c.overBudget(cv, fmt.Sprintf("refused: the call's bytes through the gateway had reached max_bytes_per_call (%d)", limit))
		cv.answer(conn, http.StatusForbidden, outcomeDenied, fmt.Sprintf("%s: the call's bytes through the gateway have reached max_bytes_per_call (%d): no connection is made until the next call%s",
			net.JoinHostPort(host, strconv.Itoa(port)), limit, cv.note))
		return nil
	}
	addrs, rule, err := c.resolve(cv.network, host, port)
	cv.Rule = rule
	if err != nil {
		var r *refusal
		if errors.As(err, &r) && r.status == http.StatusForbidden {
			cv.Outcome = outcomeDenied
		} else {
			cv.Outcome = outcomeError
		}
		cv.Reason = err.Error()
		if cv.Outcome == outcomeDenied && !strings.Contains(cv.Reason, cv.note) {
			cv.Reason += cv.note
		}
		status := http.StatusBadGateway
		if r != nil {
			status = r.status
		}
		refuse(conn, status, cv.Reason)
		return nil
	}
	up, ap, err := c.dial(cv.network, addrs, port)
	if err != nil {
		cv.answer(conn, http.StatusBadGateway, outcomeError, fmt.Sprintf("%s: %v", net.JoinHostPort(host, strconv.Itoa(port)), err))
		return nil
	}
	cv.Address = ap.String()
	return up
}
