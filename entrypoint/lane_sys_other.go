//go:build !linux

package entrypoint

import "errors"

// laneSupported reports whether this system can serve fast lanes: off
// Linux (macOS, whose engines run in a virtual machine that a Unix socket
// of the host cannot be bind-mounted into) it cannot.
const laneSupported = false

// msgNoSignal is MSG_NOSIGNAL where the system has it.
const msgNoSignal = 0

// tcpSocket refuses every descriptor: no lane hands one over here.
func tcpSocket(int) error {
	return errors.New("handing sockets over a fast lane needs Linux")
}
