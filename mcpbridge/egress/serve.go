package egress

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

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
