package egress

import (
	"fmt"
	"net"
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

// established answers a CONNECT that the gateway takes.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"
