package entrypoint

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Egress connections handed over the lane: instead of relaying a
// connection of sandbox code to its proxy endpoint as net_* frames, the
// runtime passes the connection's socket itself (SCM_RIGHTS) with a
// net_fd frame, and the gateway reads and writes it directly (PROTOCOL.md,
// The fast lane). Every descriptor is checked: a connected TCP socket,
// nothing else, or the sandbox broke the protocol.
const (
	frameNetFD = "net_fd"
	// maxLaneFDs bounds the descriptors received and not yet claimed by
	// their net_fd frames; rightsSpace is room for the descriptors of
	// one read.
	maxLaneFDs  = 64
	rightsSpace = 64
)

// A rightsReader reads the lane, keeping the descriptors that come with
// its bytes, in order, for the net_fd frames they belong to.
type rightsReader struct {
	c   *net.UnixConn
	oob []byte

	mu  sync.Mutex
	fds []int
}

func newRightsReader(c *net.UnixConn) *rightsReader {
	return &rightsReader{c: c, oob: make([]byte, syscall.CmsgSpace(4*rightsSpace))}
}

// Read reads bytes and the descriptors sent with them; more descriptors
// than it holds, or a control message cut short, break the protocol.
func (r *rightsReader) Read(p []byte) (int, error) {
	n, oobn, flags, _, err := r.c.ReadMsgUnix(p, r.oob)
	n = max(n, 0) // a failed read may say -1
	if oobn > 0 {
		if perr := r.keep(r.oob[:oobn]); perr != nil {
			return 0, perr
		}
	}
	if flags&syscall.MSG_CTRUNC != 0 {
		return 0, fmt.Errorf("%w: more descriptors at once than the lane takes (%d)", errProtocol, rightsSpace)
	}
	return n, err
}

// keep takes the descriptors of control messages oob.
func (r *rightsReader) keep(oob []byte) error {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: a control message on the lane: %v", errProtocol, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var bad error
	for i := range msgs {
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			bad = fmt.Errorf("%w: a control message on the lane that is not descriptors", errProtocol)
			continue
		}
		for _, fd := range fds {
			switch {
			case bad != nil:
				syscall.Close(fd)
			case len(r.fds) >= maxLaneFDs:
				syscall.Close(fd)
				bad = fmt.Errorf("%w: over %d descriptors on the lane without their net_fd frames", errProtocol, maxLaneFDs)
			default:
				// Checked as it comes: nothing but a connected TCP socket
				// is held, not even until its frame claims it.
				if err := tcpSocket(fd); err != nil {
					syscall.Close(fd)
					bad = fmt.Errorf("%w: a descriptor on the lane that is %v", errProtocol, err)
					continue
				}
				r.fds = append(r.fds, fd)
			}
		}
	}
	return bad
}

// take returns the oldest descriptor not yet claimed.
func (r *rightsReader) take() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.fds) == 0 {
		return -1, false
	}
	fd := r.fds[0]
	r.fds = r.fds[1:]
	return fd, true
}

// close closes the descriptors no frame claimed.
func (r *rightsReader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, fd := range r.fds {
		syscall.Close(fd)
	}
	r.fds = nil
}

// socketConn returns fd, a connected TCP socket, as a net.Conn (fd is
// closed either way).
func socketConn(fd int) (net.Conn, error) {
	if err := tcpSocket(fd); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "egress")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		c.Close()
		return nil, errors.New("not a TCP socket")
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	return &handedConn{TCPConn: tc, rc: rc}, nil
}

// A handedConn is a socket sandbox code handed over. The sandbox holds
// the same open file: it may clear O_NONBLOCK, set SO_LINGER, or read
// and write it too. So every read and write passes MSG_DONTWAIT (the
// kernel never blocks the bridge on it, and deadlines hold), writes
// MSG_NOSIGNAL, and Close shuts the socket down and turns any linger off
// (a close that drops the last reference would wait out a linger the
// sandbox set) before it closes the bridge's copy; what was written still
// goes out.
type handedConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

func (c *handedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	rerr := c.rc.Read(func(fd uintptr) bool {
		n, _, err = syscall.Recvfrom(int(fd), p, syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN
	})
	if rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *handedConn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		var n int
		var err error
		werr := c.rc.Write(func(fd uintptr) bool {
			n, err = syscall.SendmsgN(int(fd), p[done:], nil, nil, syscall.MSG_DONTWAIT|msgNoSignal)
			return err != syscall.EAGAIN
		})
		if werr != nil {
			return done, werr
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// ReadFrom and WriteTo are the generic copies through Read and Write, not
// the TCP connection's own (splice, sendfile), which would block in the
// kernel on a socket without O_NONBLOCK.
func (c *handedConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c}, r)
}

func (c *handedConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

func (c *handedConn) CloseWrite() error {
	return c.control(func(fd int) { syscall.Shutdown(fd, syscall.SHUT_WR) })
}

func (c *handedConn) Close() error {
	c.control(func(fd int) {
		syscall.Shutdown(fd, syscall.SHUT_RDWR)
		syscall.SetsockoptLinger(fd, syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 0})
	})
	return c.TCPConn.Close()
}

func (c *handedConn) control(f func(fd int)) error {
	return c.rc.Control(func(fd uintptr) { f(int(fd)) })
}

// netFD serves the connection the runtime handed over with f, a net_fd
// frame: its descriptor came with the frame's bytes.
func (ctr *container) netFD(f frame) error {
	ctr.wmu.Lock()
	l := ctr.link
	ctr.wmu.Unlock()
	if l == nil || l.rights == nil {
		return fmt.Errorf("%w: net_fd frame off the lane", errProtocol)
	}
	fd, ok := l.rights.take()
	if !ok {
		return fmt.Errorf("%w: net_fd frame without its descriptor", errProtocol)
	}
	c, err := socketConn(fd)
	if err != nil {
		return fmt.Errorf("%w: net_fd frame with a descriptor that is %v", errProtocol, err)
	}
	return ctr.egress.handOver(c, f.Install)
}

// handOver serves c, a connection of sandbox code the runtime handed
// over, as open serves a relayed one; over maxEgressConns at once, it is
// closed at once, as the runtime closes one past its own bound.
func (eg *egress) handOver(c net.Conn, install bool) error {
	if eg == nil || eg.handler == nil {
		c.Close()
		return fmt.Errorf("%w: net_fd frame, but egress is off", errProtocol)
	}
	eg.mu.Lock()
	full := eg.handed >= maxEgressConns
	if !full {
		eg.handed++
	}
	eg.mu.Unlock()
	handler := eg.handler
	if install {
		handler = eg.install
	}
	if full || handler == nil {
		c.Close()
		return nil
	}
	go func() {
		defer func() {
			c.Close()
			eg.mu.Lock()
			eg.handed--
			eg.mu.Unlock()
		}()
		eg.serve(c, handler)
	}()
	return nil
}
