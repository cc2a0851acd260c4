package policy

// The inject rules once parsed: which headers a request to a host gets,
// which methods may carry them, and what the host's answers must not
// show.

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Inject returns the headers to add to requests for host:port, in the
// order of the inject rules.
func (n *Network) Inject(host string, port int) []Header {
	var out []Header
	for _, r := range n.matchingInject(host, port) {
		out = append(out, Header{Name: r.header, Value: r.value})
	}
	return out
}

// HasInject reports whether a rule injects headers for host:port.
func (n *Network) HasInject(host string, port int) bool {
	return len(n.matchingInject(host, port)) > 0
}

// Masks returns what the answers of host:port must not show, longest
// first: each ${NAME} expansion of the values its inject rules add, and
// each whole value of 8 bytes or more (a short value written in the
// file, such as an API version, is ordinary text). The gateway replaces
// every occurrence with a mask of the same length.
func (n *Network) Masks(host string, port int) []Secret {
	var out []Secret
	for _, r := range n.matchingInject(host, port) {
		out = append(out, r.masks...)
	}
	return out
}

// CheckMethod decides whether a request of method may go to host:port,
// a host the connection was allowed to: to a host with an inject rule,
// TRACE and TRACK are refused (they echo the request, its secret
// included, back to the sandbox); on an install network
// (InstallNetwork), so is every method but GET and HEAD, the methods pip
// fetches with, to an index host with an inject rule. Any method goes to
// other hosts.
func (n *Network) CheckMethod(host string, port int, method string) Decision {
	if !n.HasInject(host, port) {
		return Decision{Allowed: true}
	}
	target := hostPort(strings.Trim(host, "[]"), port)
	switch m := strings.ToUpper(method); {
	case m == "TRACE" || m == "TRACK":
		return refuse("", fmt.Sprintf("%s: %s is refused to a host the gateway adds a secret to: it would echo the secret back", target, method))
	case n.install != nil && method != http.MethodGet && method != http.MethodHead:
		return refuse("", fmt.Sprintf("%s: %s is refused: package installs send the index's credentials with GET and HEAD only", target, method))
	}
	return Decision{Allowed: true}
}

// disabledFor returns the first disabled inject rule for host:port, or
// nil.
func (n *Network) disabledFor(host string, port int) *injectRule {
	for _, r := range n.rulesFor(host, port) {
		if r.disabled != "" {
			return r
		}
	}
	return nil
}

// matchingInject returns the rules that add headers to requests for
// host:port: the enabled ones.
func (n *Network) matchingInject(host string, port int) []*injectRule {
	var out []*injectRule
	for _, r := range n.rulesFor(host, port) {
		if r.disabled == "" {
			out = append(out, r)
		}
	}
	return out
}

// rulesFor returns the inject rules for host:port, disabled ones too.
func (n *Network) rulesFor(host string, port int) []*injectRule {
	if n.refuseAll != "" || len(n.inject) == 0 || host == "" || IsNumericIPv4Spelling(host) {
		return nil
	}
	if h, ok := strings.CutPrefix(host, "["); ok {
		host = strings.TrimSuffix(h, "]")
	}
	a, err := netip.ParseAddr(host)
	isIP := err == nil
	name := normalizeName(host)
	if n.install != nil && !n.isIndex(name, a, isIP, port) {
		return nil
	}
	var out []*injectRule
	for i := range n.inject {
		r := &n.inject[i]
		// A rule without a port adds its secret on 443 only: never in
		// plain text unless a port is written.
		if r.host.port == 0 && port != defaultPorts[1] || r.host.port != 0 && r.host.port != port {
			continue
		}
		if isIP && r.host.matchAddr(a) || !isIP && r.host.matchName(name) {
			out = append(out, r)
		}
	}
	return out
}

// isIndex reports whether the host (a name, or the address a) and port
// are one of an install network's index hosts.
func (n *Network) isIndex(name string, a netip.Addr, isIP bool, port int) bool {
	for i := range n.install {
		e := &n.install[i]
		if e.port != port {
			continue
		}
		if isIP && e.matchAddr(a) || !isIP && e.matchName(name) {
			return true
		}
	}
	return false
}
