package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

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
