package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

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

// sameAuthority reports whether a Host header names host:port (the port
// may be left out when it is def).
func sameAuthority(header, host string, port, def int) bool {
	h, p, err := splitTarget(header, def)
	return err == nil && p == port && strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(host, "."))
}
