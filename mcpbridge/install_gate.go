package mcpbridge

import (
	"net"
	"sync"
)

// An installGate is a client session's install endpoint, the listener
// in its sandbox whose connections the bridge hands to the session's
// install client (the package indexes only). Code in the sandbox can
// reach that listener as pip can, and the bridge cannot tell their
// connections apart; so the endpoint is open only while an install may
// run: from the bridge's answer to a runtime.install until the run_python
// call that asked for it ends, or earlier, once the runtime reports that
// every pip it started ended. Closing it closes its connections.
//
// A call is known by an opaque value (the session's *callInfo) compared
// for identity: the gate knows nothing else of calls.
type installGate struct {
	client  installClient // the session's install client
	current func() any    // the call running now; nil: none

	mu      sync.Mutex
	call    any // the call it is open for; nil: closed
	pending int // installs answered and not reported ended
	conns   map[net.Conn]struct{}
}

// newInstallGate returns a closed gate in front of client; current
// returns the call of the session running now (nil: none).
func newInstallGate(client installClient, current func() any) *installGate {
	return &installGate{client: client, current: current, conns: map[net.Conn]struct{}{}}
}

// An installClient is the gateway's side of a session's installs
// (egress.Client): it serves the endpoint's connections, and BeginCall
// starts an install's byte budget.
type installClient interface {
	Serve(net.Conn)
	BeginCall()
}

// open opens the endpoint for the call ci, starting an install's byte
// budget; an endpoint already open for another call is closed first.
func (g *installGate) open(ci any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.call != ci {
		g.closeLocked()
		g.call = ci
	}
	g.pending++
	g.client.BeginCall()
}

// ended records that one install of the call ci ended (the runtime said
// so); the endpoint closes once none is left.
func (g *installGate) ended(ci any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.call != ci {
		return
	}
	if g.pending--; g.pending <= 0 {
		g.closeLocked()
	}
}

// end closes the endpoint when it is open for the call ci, which ended;
// a nil *installGate (no gateway) does nothing.
func (g *installGate) end(ci any) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.call == ci {
		g.closeLocked()
	}
}

// close closes the endpoint whatever call it is open for; a nil
// *installGate does nothing.
func (g *installGate) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeLocked()
}

func (g *installGate) closeLocked() {
	g.call, g.pending = nil, 0
	for c := range g.conns {
		c.Close()
	}
	clear(g.conns)
}

// serve handles a connection of the endpoint: the install client serves
// it while the endpoint is open for the call running now, else it is
// closed at once.
func (g *installGate) serve(c net.Conn) {
	g.mu.Lock()
	open := g.call != nil && g.call == g.current()
	if open {
		g.conns[c] = struct{}{}
	}
	g.mu.Unlock()
	if !open {
		c.Close()
		return
	}
	defer func() {
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}()
	g.client.Serve(c)
}
