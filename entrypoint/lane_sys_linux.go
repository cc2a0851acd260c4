//go:build linux

package entrypoint

import (
	"errors"
	"syscall"
)

// laneSupported reports whether this system can serve fast lanes: a
// sandbox's lane is a Unix socket bind-mounted from the engine's host,
// which only a local Linux engine shares with the bridge.
const laneSupported = true

// msgNoSignal keeps a write to a socket whose peer went from raising
// SIGPIPE.
const msgNoSignal = syscall.MSG_NOSIGNAL

// tcpSocket checks that fd is a connected TCP socket.
func tcpSocket(fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return errors.New("not a socket")
	}
	typ, err1 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	dom, err2 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_DOMAIN)
	proto, err3 := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
	if err1 != nil || err2 != nil || err3 != nil || typ != syscall.SOCK_STREAM ||
		dom != syscall.AF_INET && dom != syscall.AF_INET6 || proto != syscall.IPPROTO_TCP {
		return errors.New("not a TCP socket")
	}
	if _, err := syscall.Getpeername(fd); err != nil {
		return errors.New("not a connected socket")
	}
	return nil
}
