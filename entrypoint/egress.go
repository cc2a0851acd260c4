package entrypoint

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Bounds of the egress transport (PROTOCOL.md), the same on both sides.
const (
	// egressDownWindow bounds the bytes the host sent on a connection
	// and the sandbox has not acknowledged: the sandbox's buffer of the
	// connection, which counts against the sandbox's own memory.
	egressDownWindow = 1 << 20
	// egressUpWindow bounds the bytes the sandbox sent on a connection
	// and the host has not acknowledged: the host's buffer of it, kept
	// small because the bridge holds one for every connection of every
	// sandbox.
	egressUpWindow = 256 << 10
	// egressChunk bounds the bytes of one net_data frame.
	egressChunk = 64 << 10
	// egressAckBatch is how many bytes read make a net_ack before the
	// read buffer empties.
	egressAckBatch = 64 << 10
	// maxEgressConns bounds a sandbox's connections open at once.
	maxEgressConns = 256
	// maxEgressCID bounds a connection id (the integers a JSON number
	// holds exactly).
	maxEgressCID = 1 << 53
)

// errEgressClosed reports a connection its sandbox closed, to Write.
var errEgressClosed = errors.New("the sandbox closed the connection")

// Host → sandbox frames of the egress transport.
type egressFrame struct {
	T  string `json:"t"`
	CA string `json:"ca"`
}

type netCloseFrame struct {
	T   string `json:"t"`
	CID int64  `json:"cid"`
}

type netAckFrame struct {
	T   string `json:"t"`
	CID int64  `json:"cid"`
	N   int    `json:"n"`
}

// An egress is the set of connections one sandbox opened through its
// proxy endpoint. Its frames are dispatched on the container's frame
// reader, which it never blocks.
type egress struct {
	ctr     *container
	handler func(net.Conn)
	install func(net.Conn) // the install endpoint's connections; nil: closed at once

	mu    sync.Mutex
	conns map[int64]*egressConn // open, or closed by the host and not yet by the sandbox
	last  int64                 // the highest cid opened (ids only grow)
	any   bool                  // a connection was opened
	// handed counts the connections handed over the lane (lane_fds.go)
	// whose handlers still run.
	handed int
	// severed is the highest cid open when the streams were cut (see
	// sever); -1: none was.
	severed int64
}

// dispatch acts on a net_* frame of the sandbox.
func (eg *egress) dispatch(f frame) error {
	if eg == nil || eg.handler == nil {
		return fmt.Errorf("%w: %s frame, but egress is off", errProtocol, f.T)
	}
	if f.T == frameNetOpen {
		return eg.open(f.CID, f.Install)
	}
	eg.mu.Lock()
	c := eg.conns[f.CID]
	if c != nil && f.T == frameNetClose {
		delete(eg.conns, f.CID)
	}
	severed := f.CID <= eg.severed
	eg.mu.Unlock()
	if c == nil && severed {
		return nil // a connection severed where the streams were cut
	}
	if c == nil {
		return fmt.Errorf("%w: %s frame for connection %d, which is not open", errProtocol, f.T, f.CID)
	}
	switch f.T {
	case frameNetData:
		return c.received(f.NetData)
	case frameNetAck:
		return c.acked(f.NetN)
	case frameNetClose:
		c.remoteClose()
	}
	return nil
}

// sever ends every open connection where the sandbox's streams were cut
// and attached again (container.resync): bytes either way may be lost,
// so none can go on. The runtime is told to close each; what it still
// sends for them is dropped.
func (eg *egress) sever() {
	if eg == nil {
		return
	}
	eg.mu.Lock()
	conns := eg.conns
	eg.conns = map[int64]*egressConn{}
	if eg.any {
		eg.severed = eg.last
	}
	eg.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// open starts serving a connection the sandbox announced, with the
// install handler when it came to the install endpoint.
func (eg *egress) open(cid int64, install bool) error {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	if eg.any && cid <= eg.last {
		return fmt.Errorf("%w: net_open of connection %d after %d", errProtocol, cid, eg.last)
	}
	if len(eg.conns) >= maxEgressConns {
		return fmt.Errorf("%w: over %d egress connections", errProtocol, maxEgressConns)
	}
	c := &egressConn{ctr: eg.ctr, cid: cid, credit: egressDownWindow, changed: make(chan struct{})}
	eg.conns[cid], eg.last, eg.any = c, cid, true
	handler := eg.handler
	if install {
		handler = eg.install
	}
	if handler == nil {
		go c.Close() // no installs here
		return nil
	}
	go eg.serve(c, handler)
	return nil
}

// serve runs the handler on c, turning a panic into a closed connection.
func (eg *egress) serve(c net.Conn, handler func(net.Conn)) {
	defer func() {
		if p := recover(); p != nil {
			eg.ctr.log.Error("egress handler panicked", "panic", p)
			c.Close()
		}
	}()
	handler(c)
}

// An egressConn is one connection sandbox code opened through the
// runtime's proxy endpoint, seen from the host: its bytes travel as
// net_data frames, within the credit of the other side.
type egressConn struct {
	ctr *container
	cid int64
	wmu sync.Mutex // serializes Writes

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change of state
	buf     []byte        // received, not yet read
	unacked int           // received and not yet acknowledged (buffered or read)
	read    int           // read and not yet acknowledged
	credit  int           // bytes Write may still send
	closed  bool          // Close was called
	remote  bool          // the sandbox closed it
	rdl     time.Time     // read deadline
	wdl     time.Time     // write deadline
}

// notify wakes the waiters of c; c.mu is held.
func (c *egressConn) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// received buffers bytes from the sandbox, which must be within its credit.
func (c *egressConn) received(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil // closed here: the sandbox sent them before it knew
	}
	if c.unacked+len(b) > egressUpWindow {
		return fmt.Errorf("%w: connection %d sent %d bytes past its credit", errProtocol, c.cid, c.unacked+len(b)-egressUpWindow)
	}
	if c.buf == nil {
		c.buf = b // the reader's own slice: no copy
	} else {
		c.buf = append(c.buf, b...)
	}
	c.unacked += len(b)
	c.notify()
	return nil
}

// acked returns credit the sandbox acknowledged.
func (c *egressConn) acked(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.credit+n > egressDownWindow {
		return fmt.Errorf("%w: connection %d acknowledged %d bytes not sent", errProtocol, c.cid, c.credit+n-egressDownWindow)
	}
	c.credit += n
	c.notify()
	return nil
}

// remoteClose records the sandbox's net_close.
func (c *egressConn) remoteClose() {
	c.mu.Lock()
	c.remote = true
	c.notify()
	c.mu.Unlock()
}

// wait waits, c.mu not held, for ch (a change), the deadline or the
// sandbox's death.
func (c *egressConn) wait(ch <-chan struct{}, deadline time.Time) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-c.ctr.dead:
		return c.lost()
	case <-timeout:
		return os.ErrDeadlineExceeded
	}
}

// lost is the error of a connection whose sandbox died.
func (c *egressConn) lost() error {
	return fmt.Errorf("egress connection %d: %w", c.cid, c.ctr.err)
}

// expired reports whether deadline has passed.
func expired(deadline time.Time) bool {
	return !deadline.IsZero() && !time.Now().Before(deadline)
}

// Read reads bytes user code wrote, acknowledging them to the sandbox.
func (c *egressConn) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return 0, net.ErrClosed
		case c.ctr.Err() != nil:
			c.mu.Unlock()
			return 0, c.lost()
		case expired(c.rdl):
			c.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		case len(p) == 0:
			c.mu.Unlock()
			return 0, nil
		case len(c.buf) > 0:
			n := copy(p, c.buf)
			c.buf = c.buf[n:]
			if len(c.buf) == 0 {
				c.buf = nil
			}
			c.read += n
			ack := 0
			if c.read >= egressAckBatch || len(c.buf) == 0 {
				ack, c.read = c.read, 0
				c.unacked -= ack
			}
			remote := c.remote
			c.mu.Unlock()
			if ack > 0 && !remote {
				c.ctr.send(netAckFrame{T: frameNetAck, CID: c.cid, N: ack})
			}
			return n, nil
		case c.remote:
			c.mu.Unlock()
			return 0, io.EOF
		}
		ch, deadline := c.changed, c.rdl
		c.mu.Unlock()
		if err := c.wait(ch, deadline); err != nil {
			return 0, err
		}
	}
}

// Write sends p to user code in chunks, each within the sandbox's credit.
func (c *egressConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	done := 0
	for done < len(p) {
		c.mu.Lock()
		var err error
		switch {
		case c.closed:
			err = net.ErrClosed
		case c.ctr.Err() != nil:
			err = c.lost()
		case expired(c.wdl):
			err = os.ErrDeadlineExceeded
		case c.remote:
			err = errEgressClosed
		}
		if err != nil {
			c.mu.Unlock()
			return done, err
		}
		if c.credit == 0 {
			ch, deadline := c.changed, c.wdl
			c.mu.Unlock()
			if err := c.wait(ch, deadline); err != nil {
				return done, err
			}
			continue
		}
		n := min(len(p)-done, egressChunk, c.credit)
		c.credit -= n
		c.mu.Unlock()
		if err := c.ctr.sendData(c.cid, p[done:done+n]); err != nil {
			return done, fmt.Errorf("sending to egress connection %d: %w", c.cid, err)
		}
		done += n
	}
	return done, nil
}

// Close closes the connection: the sandbox closes its socket once the
// bytes written before are delivered.
func (c *egressConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	c.buf = nil
	remote := c.remote
	c.notify()
	c.mu.Unlock()
	if !remote {
		c.ctr.send(netCloseFrame{T: frameNetClose, CID: c.cid})
	}
	return nil
}

// LocalAddr names the host's end of the connection.
func (c *egressConn) LocalAddr() net.Addr { return egressAddr("host") }

// RemoteAddr names the sandbox's end of the connection.
func (c *egressConn) RemoteAddr() net.Addr {
	return egressAddr("sandbox/" + strconv.FormatInt(c.cid, 10))
}

// SetDeadline sets the read and write deadlines.
func (c *egressConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl, c.wdl = t, t
	c.notify()
	c.mu.Unlock()
	return nil
}

// SetReadDeadline sets the read deadline.
func (c *egressConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.notify()
	c.mu.Unlock()
	return nil
}

// SetWriteDeadline sets the write deadline.
func (c *egressConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.notify()
	c.mu.Unlock()
	return nil
}

// An egressAddr is an end of an egress connection.
type egressAddr string

// Network is "egress".
func (egressAddr) Network() string { return "egress" }

func (a egressAddr) String() string { return string(a) }
