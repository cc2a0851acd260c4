package policy

// The inject rules once parsed: which headers a request to a host gets,
// which methods may carry them, and what the host's answers must not
// show.

import (
	"fmt"
	"net/http"
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
