package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The network section: which hosts and ports code in the sandbox may
// connect to through the egress gateway, the headers the gateway adds to
// requests for some of them, and the bounds of its connections. Parsing
// and deciding only; nothing here dials or resolves.
//
// An allow or deny entry is a host name ("api.github.com"), a glob
// ("*.example.org": every subdomain at any depth, not example.org
// itself), an IP address ("10.0.0.1", "2001:db8::1") or a CIDR
// ("10.1.2.0/24", "2001:db8::/32"), with an optional ":port" (an IPv6
// address or CIDR is then bracketed: "[2001:db8::1]:443",
// "[2001:db8::]/32:443"). An allow entry without a port allows ports 80
// and 443 only; an inject rule without a port adds its header on 443 only
// (a secret goes in plain text only where a port says so); a deny entry
// without a port denies every port, so that
// "deny": ["internal.example.org"] is never undone by an allow glob with
// a port. Names are compared without regard to case, a trailing dot
// ignored. Deny wins over allow.
//
// A special-purpose address (see specialRanges: loopback, private,
// link-local, documentation, IPv6 forms embedding IPv4, …) is refused
// unless an allow entry that is an IP address or a CIDR containing it
// allows it on that port; a name entry never does. An address embedding
// an IPv4 address (::ffff:a.b.c.d, 64:ff9b::a.b.c.d, 2002:AABB:CCDD::,
// ::a.b.c.d) is judged both as itself and as that IPv4 address.

// Defaults and bounds of the network section.
const (
	defaultMaxConnections  = 16
	maxMaxConnections      = 4096
	defaultMaxBytesPerCall = 256 << 20
	maxMaxBytesPerCall     = 1 << 40
	defaultConnectTimeout  = 10 * time.Second
	defaultIdleTimeout     = 60 * time.Second
	maxTimeoutSeconds      = 3600
	maxInjectRules         = 1000
)

// defaultPorts are the ports an allow entry without a port allows.
var defaultPorts = [...]int{80, 443}

// A NetworkSection is the "network" section of a policy file as written;
// Policy.Network gives it parsed and checked.
type NetworkSection struct {
	Allow  []string     `json:"allow"`
	Deny   []string     `json:"deny"`
	Inject []InjectSpec `json:"inject"`
	// Pointers tell an explicit 0 (an error) from absent (the default).
	MaxConnections  *int     `json:"max_connections"`
	MaxBytesPerCall *int64   `json:"max_bytes_per_call"`
	ConnectTimeout  *float64 `json:"connect_timeout"` // seconds
	IdleTimeout     *float64 `json:"idle_timeout"`    // seconds
}

// An InjectSpec is an entry of "inject" as written: Value holds the
// template, ${NAME} not yet substituted, and is itself redacted since an
// operator may write a secret there literally.
type InjectSpec struct {
	Host   string `json:"host"`
	Header string `json:"header"`
	Value  Secret `json:"value"`
}

// A Header is a header to add to a request.
type Header struct {
	Name  string
	Value Secret
}

// A Decision says whether a connection may be made, and why. Rule is
// the allow or deny entry that decided, as written ("" when none did);
// Reason says why a connection is refused ("" when it is allowed).
type Decision struct {
	Allowed      bool
	Rule, Reason string
}

// Network is the parsed network section. Its methods are safe for
// concurrent use; a Network never changes once parsed.
type Network struct {
	allow, deny []entry
	inject      []injectRule

	maxConns       int
	maxBytes       int64
	connectTimeout time.Duration
	idleTimeout    time.Duration

	refuseAll string // when set, the reason every connection is refused
	// trusted are the allow entries (as written) whose names may resolve
	// to special-purpose addresses: the package indexes an operator named
	// (InstallNetwork).
	trusted map[string]bool
	// install holds an install network's index hosts (InstallNetwork):
	// the only ones its inject rules add to, on GET and HEAD only. Nil
	// for a policy's own network.
	install []entry
}

type injectRule struct {
	host   entry
	header string
	value  Secret
	masks  []Secret // what answers must not show (maskValues)
	// disabled, when set, says why the rule adds nothing (a ${NAME} its
	// value names is unset or empty): its host is refused, saying so.
	disabled string
}

// String summarizes n without any injected value.
func (n *Network) String() string {
	if n == nil {
		return "network<nil>"
	}
	if n.refuseAll != "" {
		return "network{refuses every connection: " + n.refuseAll + "}"
	}
	raws := func(es []entry) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.raw
		}
		return out
	}
	inj := make([]string, len(n.inject))
	for i, r := range n.inject {
		inj[i] = r.host.raw + " " + r.header + ": " + redacted
		if r.disabled != "" {
			inj[i] = r.host.raw + " " + r.header + ": disabled (" + r.disabled + ")"
		}
	}
	return fmt.Sprintf("network{allow: %q, deny: %q, inject: %q, max_connections: %d, max_bytes_per_call: %d, connect_timeout: %v, idle_timeout: %v}",
		raws(n.allow), raws(n.deny), inj, n.maxConns, n.maxBytes, n.connectTimeout, n.idleTimeout)
}

// GoString is String.
func (n *Network) GoString() string { return n.String() }

// Format writes String whatever the verb.
func (n *Network) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, n.String()) }

// MarshalJSON gives String as a JSON string: a Network is not a file's
// content, and its secrets must not leave memory.
func (n *Network) MarshalJSON() ([]byte, error) { return json.Marshal(n.String()) }

func refusingNetwork(reason string) *Network {
	return &Network{refuseAll: reason, maxConns: defaultMaxConnections, maxBytes: defaultMaxBytesPerCall,
		connectTimeout: defaultConnectTimeout, idleTimeout: defaultIdleTimeout}
}

// MaxConnections bounds the gateway's open connections per sandbox.
func (n *Network) MaxConnections() int { return n.maxConns }

// MaxBytesPerCall bounds the bytes through the gateway in one call.
func (n *Network) MaxBytesPerCall() int64 { return n.maxBytes }

// ConnectTimeout bounds the making of one connection.
func (n *Network) ConnectTimeout() time.Duration { return n.connectTimeout }

// IdleTimeout closes a connection idle for this long.
func (n *Network) IdleTimeout() time.Duration { return n.idleTimeout }

// Kinds of entries.
const (
	kindName   = iota // an exact host name
	kindGlob          // *.suffix
	kindPrefix        // an IP address (a full-length prefix) or a CIDR
)

// An entry is an allow or deny entry, or the host of an inject rule.
type entry struct {
	raw    string
	kind   int
	name   string       // kindName: the name; kindGlob: ".suffix"; lower case, no trailing dot
	prefix netip.Prefix // kindPrefix
	port   int          // 0: none written
}

// A Target is a host name and port an allow entry names.
type Target struct {
	Host string
	Port int
}

// NamedTargets returns the host names the allow entries name (globs and
// addresses left out), each with its port, or 443 for an entry without
// one: what a check of the section resolves.
func (n *Network) NamedTargets() []Target {
	var out []Target
	for _, e := range n.allow {
		if e.kind == kindName {
			port := e.port
			if port == 0 {
				port = defaultPorts[1]
			}
			out = append(out, Target{Host: e.name, Port: port})
		}
	}
	return out
}

// Summary says what the section holds: its entries and rules, or why it
// refuses everything.
func (n *Network) Summary() string {
	if n.refuseAll != "" {
		return n.refuseAll
	}
	s := fmt.Sprintf("%d allow entries, %d deny entries, %d inject rules; at most %d connections a sandbox, %d bytes a call",
		len(n.allow), len(n.deny), len(n.inject), n.maxConns, n.maxBytes)
	if d := n.DisabledInject(); len(d) > 0 {
		s += "; disabled (their hosts are refused): " + strings.Join(d, "; ")
	}
	return s
}

// DisabledInject says, for each inject rule that adds nothing because a
// ${NAME} of its value is unset or empty, which rule and why, naming the
// variable, never a value: "inject[0] (api.github.com:443
// Authorization): the environment variable GITHUB_TOKEN is not set".
func (n *Network) DisabledInject() []string {
	var out []string
	for i, r := range n.inject {
		if r.disabled != "" {
			out = append(out, fmt.Sprintf("inject[%d] (%s %s): %s", i, r.host.raw, r.header, r.disabled))
		}
	}
	return out
}

// portMatches reports whether e covers port: its own, or without one,
// 80 and 443 for an allow entry and every port for a deny entry.
func (e *entry) portMatches(port int, deny bool) bool {
	if e.port != 0 {
		return e.port == port
	}
	return deny || port == defaultPorts[0] || port == defaultPorts[1]
}

// matchName reports whether e, a name or glob, matches the normalized name.
func (e *entry) matchName(name string) bool {
	switch e.kind {
	case kindName:
		return name == e.name
	case kindGlob:
		return len(name) > len(e.name) && strings.HasSuffix(name, e.name)
	}
	return false
}

// matchAddr reports whether e, an IP address or a CIDR, contains a.
func (e *entry) matchAddr(a netip.Addr) bool {
	return e.kind == kindPrefix && e.prefix.Contains(a)
}

// CheckName decides on a connection to host:port before host is
// resolved; host is as the client named it, a name or an IP address
// (brackets allowed). It refuses numeric IPv4 spellings, denied names,
// and names or addresses no allow entry allows on that port. A name
// allowed here must still pass CheckAddr with each address it resolves to.
func (n *Network) CheckName(host string, port int) Decision {
	if n.refuseAll != "" {
		return refuse("", "no connection is allowed: "+n.refuseAll)
	}
	if port < 1 || port > 65535 {
		return refuse("", fmt.Sprintf("port %d is not from 1 to 65535", port))
	}
	if r := n.disabledFor(host, port); r != nil {
		// Its secret is missing: the host gets nothing rather than a
		// request without it.
		return refuse(r.host.raw, fmt.Sprintf("%s: the inject rule for %q (header %s) is disabled: %s in the bridge's environment; set it and restart the bridge",
			hostPort(strings.Trim(host, "[]"), port), r.host.raw, r.header, r.disabled))
	}
	if h, ok := strings.CutPrefix(host, "["); ok {
		host = strings.TrimSuffix(h, "]")
	}
	if host == "" {
		return refuse("", "no host is named")
	}
	if IsNumericIPv4Spelling(host) {
		return refuse("", fmt.Sprintf("%q is a numeric spelling of an IPv4 address, not a host name", host))
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return n.checkIP(a, port)
	}
	if strings.ContainsAny(host, ":%") {
		return refuse("", fmt.Sprintf("%q is not a host name or an IP address", host))
	}
	name := normalizeName(host)
	if checkName(name) != nil {
		return refuse("", fmt.Sprintf("%q is not a valid host name", host))
	}
	target := hostPort(name, port)
	for i := range n.deny {
		if e := &n.deny[i]; e.matchName(name) && e.portMatches(port, true) {
			return refuse(e.raw, fmt.Sprintf("%s is denied by %q", target, e.raw))
		}
	}
	for i := range n.allow {
		if e := &n.allow[i]; e.matchName(name) && e.portMatches(port, false) {
			return Decision{Allowed: true, Rule: e.raw}
		}
	}
	return refuse("", target+" is not allowed by the network policy")
}

// CheckAddr decides on a connection to addr, an address host:port
// resolved to (or for an IP address host, that address; "" host stands
// for addr itself). It runs CheckName first, then refuses addresses
// denied by an IP or CIDR entry and special-purpose addresses no IP or
// CIDR allow entry allows on that port.
func (n *Network) CheckAddr(host string, port int, addr netip.Addr) Decision {
	if !addr.IsValid() {
		return refuse("", "no address is given")
	}
	if host == "" {
		host = addr.String()
	}
	d := n.CheckName(host, port)
	if !d.Allowed {
		return d
	}
	if h, ok := strings.CutPrefix(host, "["); ok {
		host = strings.TrimSuffix(h, "]")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a != addr {
			return refuse("", fmt.Sprintf("the address %s is not the host %s", addr, host))
		}
		return d // checkIP has judged it
	}
	if addr.Zone() != "" {
		return refuse("", fmt.Sprintf("%s is an address with a zone", addr))
	}
	for _, c := range candidates(addr) {
		if e, ok := n.deniedAddr(c.addr, port); ok {
			return refuse(e.raw, fmt.Sprintf("%s (%s) is denied by %q", c, host, e.raw))
		}
	}
	for _, c := range candidates(addr) {
		if what := special(c.addr); what != "" {
			e, ok := n.allowedAddr(c.addr, port)
			if !ok && n.trusted[d.Rule] {
				continue
			}
			if !ok {
				return refuse("", fmt.Sprintf("%s (%s) is %s; only an allow entry naming it or a CIDR that contains it allows it", c, host, what))
			}
			d.Rule = e.raw
		}
	}
	return d
}

// checkIP decides on a connection to the IP address a: not denied, each
// of a and the IPv4 address it embeds allowed by an IP or CIDR entry,
// special or not.
func (n *Network) checkIP(a netip.Addr, port int) Decision {
	if a.Zone() != "" {
		return refuse("", fmt.Sprintf("%s is an address with a zone", a))
	}
	cs := candidates(a)
	for _, c := range cs {
		if e, ok := n.deniedAddr(c.addr, port); ok {
			return refuse(e.raw, fmt.Sprintf("%s is denied by %q", c, e.raw))
		}
	}
	var rule string
	for _, c := range cs {
		e, ok := n.allowedAddr(c.addr, port)
		if !ok {
			if what := special(c.addr); what != "" {
				return refuse("", fmt.Sprintf("%s is %s; only an allow entry naming it or a CIDR that contains it allows it", c, what))
			}
			if c.in.IsValid() {
				// A public IPv4 address embedded in an allowed IPv6
				// one: the IPv6 entry decided.
				continue
			}
			return refuse("", hostPort(a.String(), port)+" is not allowed by the network policy")
		}
		if rule == "" {
			rule = e.raw
		}
	}
	return Decision{Allowed: true, Rule: rule}
}

func (n *Network) deniedAddr(a netip.Addr, port int) (*entry, bool) {
	for i := range n.deny {
		if e := &n.deny[i]; e.matchAddr(a) && e.portMatches(port, true) {
			return e, true
		}
	}
	return nil, false
}

func (n *Network) allowedAddr(a netip.Addr, port int) (*entry, bool) {
	for i := range n.allow {
		if e := &n.allow[i]; e.matchAddr(a) && e.portMatches(port, false) {
			return e, true
		}
	}
	return nil, false
}

// A candidate is an address to judge: the address itself, or the IPv4
// address embedded in in.
type candidate struct {
	addr, in netip.Addr
}

func (c candidate) String() string {
	if c.in.IsValid() {
		return fmt.Sprintf("%s (embedded in %s)", c.addr, c.in)
	}
	return c.addr.String()
}

func candidates(a netip.Addr) []candidate {
	cs := []candidate{{addr: a}}
	if v4, ok := EmbeddedIPv4(a); ok {
		cs = append(cs, candidate{addr: v4, in: a})
	}
	return cs
}

var (
	mappedPrefix  = netip.MustParsePrefix("::ffff:0:0/96")
	nat64Prefix   = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	compatPrefix  = netip.MustParsePrefix("::/96")
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// EmbeddedIPv4 returns the IPv4 address an IPv6 address embeds: that of
// an IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16)
// or IPv4-compatible (::/96, but :: and ::1) address.
func EmbeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	a = a.WithZone("")
	b := a.As16()
	switch {
	case mappedPrefix.Contains(a), nat64Prefix.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case compatPrefix.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte(b[12:16])), true
	}
	return netip.Addr{}, false
}

// specialRanges are the special-purpose addresses, most specific first;
// an IPv6 address outside them and outside 2000::/3 is "a reserved
// IPv6 address" too. Documentation ranges count as special.
var specialRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.169.254/32"), "a link-local address (cloud metadata)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a reserved address (6to4 relay)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},

	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "an IPv4-mapped address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address (deprecated)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address"},
	{netip.MustParsePrefix("2001:2::/48"), "a benchmarking address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("fc00::/7"), "a unique local (private) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// special says what special-purpose address a is ("a loopback
// address"), or "" for a public one.
func special(a netip.Addr) string {
	a = a.WithZone("")
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	if a.Is6() && !globalUnicast.Contains(a) {
		return "a reserved IPv6 address"
	}
	return ""
}

func refuse(rule, reason string) Decision { return Decision{Rule: rule, Reason: reason} }

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func normalizeName(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

// checkName checks a normalized host name: ASCII letters, digits, - and
// _ in dot-separated labels of 1 to 63 bytes, 253 bytes in all.
func checkName(n string) error {
	if n == "" || len(n) > 253 {
		return errors.New("it is not a host name (want 1 to 253 bytes)")
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("it is not a host name (a label is empty or longer than 63 bytes)")
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				if c == '/' || c == '?' || c == '#' {
					return errors.New("it holds a path; write the host alone, with an optional :port")
				}
				return fmt.Errorf("it is not a host name (%q is not allowed in one)", c)
			}
		}
	}
	return nil
}

// IsNumericIPv4Spelling reports whether host is a numeric spelling of
// an IPv4 address other than the dotted quad, as inet_aton and URL
// parsers read them: "2130706433", "0x7f.1", "017700000001", "127.1",
// "0177.0.0.1", "127.0.0.1." — a host whose last dot-separated label
// (a trailing dot ignored) is a decimal number or 0x and hex digits.
// Such a host is no host name; the network policy refuses it without
// any lookup. "127.0.0.1" itself is an IP address, not such a spelling.
func IsNumericIPv4Spelling(host string) bool {
	if isAddr(host) || strings.Contains(host, ":") {
		return false
	}
	h := strings.TrimSuffix(host, ".")
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
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
