// Package egress is the sandbox's gateway to the world: an HTTP proxy
// that sandbox code reaches through the runtime's endpoint (the
// connections come over the sandbox's own channel, as net.Conns), which
// decides by the tool policy's network section where code may connect,
// resolves names itself, dials only the addresses it checked, and adds the
// operator's secrets to requests on the way out (terminating TLS, with a
// CA of its own, only for the hosts a secret is added to).
package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// Bounds of what the gateway reads from a sandbox before it decides.
const (
	maxHeadBytes = 64 << 10         // a request's line and headers
	headTimeout  = 10 * time.Second // to send them
	// copyBuffer is what one read of a relayed stream asks for: the
	// largest net_data frame of the sandbox transport (PROTOCOL.md).
	copyBuffer = 64 << 10
)

// A Resolver looks up the addresses of a host name (net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// A Dialer connects to an address (net.Dialer is one).
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Metrics receive the gateway's counts; every method must be safe for
// concurrent use.
type Metrics interface {
	// Connection counts a connection by its outcome: allowed, denied or
	// error.
	Connection(outcome string)
	// Bytes counts bytes through the gateway: dir is "out" (from the
	// sandbox) or "in" (to it).
	Bytes(dir string, n int64)
}

// Options configure a Gateway. Policy is required; every other zero
// value is a documented default.
type Options struct {
	// Policy returns the tool policy in force (policy.File's Current),
	// whose network section decides; an error (a broken policy) refuses
	// every connection with its text, and a nil policy has no section.
	Policy func() (*policy.Policy, error)
	// Resolver resolves host names. Zero: net.DefaultResolver.
	Resolver Resolver
	// Dialer dials the checked addresses. Zero: a net.Dialer.
	Dialer Dialer
	// RootCAs verify the hosts the gateway itself speaks TLS to (those
	// with a secret to add). Zero: the system's roots (SSL_CERT_FILE and
	// SSL_CERT_DIR honoured).
	RootCAs *x509.CertPool
	// CA signs the certificates the gateway shows sandbox code for the
	// hosts it adds a secret to. Zero: a CA made by New, kept in memory.
	CA *CA
	// Audit receives an egress record of every connection, and of every
	// request of an intercepted one. Zero: none.
	Audit *audit.Log
	// Metrics receive counts. Zero: none.
	Metrics Metrics
	// Logger receives the gateway's logs. Zero: discarded.
	Logger *slog.Logger
}

// A Gateway serves the connections of every sandbox of a bridge.
type Gateway struct {
	opts Options
	log  *slog.Logger
}

// New returns a gateway; it makes a CA unless opts gives one.
func New(opts *Options) (*Gateway, error) {
	g := &Gateway{opts: *opts}
	if g.opts.Policy == nil {
		return nil, errors.New("egress: no network policy source")
	}
	if g.opts.Resolver == nil {
		g.opts.Resolver = net.DefaultResolver
	}
	if g.opts.Dialer == nil {
		g.opts.Dialer = &net.Dialer{}
	}
	if g.opts.CA == nil {
		ca, err := NewCA()
		if err != nil {
			return nil, err
		}
		g.opts.CA = ca
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

// CA returns the certificate authority sandboxes must trust, in PEM.
func (g *Gateway) CA() []byte { return g.opts.CA.CertPEM() }

// A Client is one sandbox's side of the gateway: its open connections
// and the bytes of its current call.
type Client struct {
	g       *Gateway
	session string
	install *policy.InstallHosts // an install client's hosts (NewInstallClient); nil for others

	open     atomic.Int64           // connections open
	callUsed atomic.Int64           // bytes of the current call
	notice   atomic.Pointer[string] // why the current call's bytes were refused or cut

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// NewClient returns the gateway's side of the sandbox of session (its
// name, for records and logs).
func (g *Gateway) NewClient(session string) *Client {
	return &Client{g: g, session: session, conns: map[net.Conn]struct{}{}}
}

// NewInstallClient returns the gateway's side of the package installs of
// session: its connections reach only hosts (the package indexes and the
// hosts their files are on), whatever the policy's network section
// allows, and an index's secret goes with GET and HEAD only
// (policy.InstallNetwork). Its byte budget is one install's: BeginCall
// starts each.
func (g *Gateway) NewInstallClient(session string, hosts policy.InstallHosts) *Client {
	c := g.NewClient(session)
	hosts.Index, hosts.Files = slices.Clone(hosts.Index), slices.Clone(hosts.Files)
	c.install = &hosts
	return c
}

// BeginCall starts a call's byte count: the bytes that flow from now on,
// on any of the client's connections, count against it. A nil *Client
// does nothing.
func (c *Client) BeginCall() {
	if c != nil {
		c.callUsed.Store(0)
		c.notice.Store(nil)
	}
}

// EndCall returns what the call should be told of the gateway: why a
// connection was cut or refused for passing max_bytes_per_call, the first
// time in the call; "" when nothing was. A nil *Client returns "".
func (c *Client) EndCall() string {
	if c == nil {
		return ""
	}
	if p := c.notice.Swap(nil); p != nil {
		return *p
	}
	return ""
}

// Close closes every connection of the client; a nil *Client does
// nothing.
func (c *Client) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	conns := c.conns
	c.conns = map[net.Conn]struct{}{}
	c.mu.Unlock()
	for conn := range conns {
		conn.Close()
	}
}

// track records conn as open until the returned function runs.
func (c *Client) track(conn net.Conn) func() {
	c.mu.Lock()
	c.conns[conn] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
	}
}
