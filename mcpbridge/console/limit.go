package console

import (
	"net/netip"
	"sync"
	"time"
)

// maxLimitedAddresses bounds the remote addresses whose wrong tokens are
// counted at once; past it, the addresses not yet counted share one
// count (overflowKey), so that a flood of addresses costs no memory.
const maxLimitedAddresses = 4096

// overflowKey is the count shared by the addresses past
// maxLimitedAddresses.
const overflowKey = "*"

// A failureLimit counts the wrong tokens of each remote address (an IPv6
// address by its /64, which one host holds whole) in one-minute windows.
// Only wrong tokens are counted and refused: a request is compared with
// the token first, and a right one never meets the limit, so that
// clients behind one proxy (one address) cannot lock each other out, and
// nobody locks out an operator from elsewhere.
type failureLimit struct {
	perMin int
	max    int
	mu     sync.Mutex
	by     map[string]*failureWindow
}

// A failureWindow is one address's wrong tokens since start.
type failureWindow struct {
	start time.Time
	n     int
}

func newFailureLimit(perMin int) *failureLimit {
	return &failureLimit{perMin: perMin, max: maxLimitedAddresses, by: map[string]*failureWindow{}}
}

// remoteKey names the address a request's wrong tokens are counted
// under: an IPv4 address itself, an IPv6 one by its /64, anything that
// is not an address (a Unix socket's peer) as it is.
func remoteKey(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// fail counts a wrong token from remoteAddr and reports whether that
// address had used up the minute's attempts before it: the caller then
// answers 429 (the attempt is not counted again) rather than 401.
func (l *failureLimit) fail(remoteAddr string) (limited bool) {
	key := remoteKey(remoteAddr)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.by[key]
	if w == nil {
		if len(l.by) >= l.max {
			l.sweep(now)
		}
		if len(l.by) >= l.max {
			key = overflowKey
			w = l.by[key]
		}
	}
	if w == nil || now.Sub(w.start) >= time.Minute {
		w = &failureWindow{start: now}
		l.by[key] = w
	}
	if w.n >= l.perMin {
		return true
	}
	w.n++
	return false
}

// sweep forgets the windows that ended; l.mu is held.
func (l *failureLimit) sweep(now time.Time) {
	for k, w := range l.by {
		if now.Sub(w.start) >= time.Minute {
			delete(l.by, k)
		}
	}
}

// tracked returns how many addresses are counted (for tests).
func (l *failureLimit) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by)
}
