package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
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
// and 443 only; a deny entry without a port denies every port, so that
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

// A Secret is a value that is never printed: String, GoString, Format,
// MarshalJSON, MarshalText and LogValue all give "[redacted]". Reveal
// gives the value. It holds the value behind a pointer, so that even
// printing a struct that holds a Secret in an unexported field shows an
// address, not the value.
type Secret struct{ p *string }

const redacted = "[redacted]"

// NewSecret returns a Secret holding v.
func NewSecret(v string) Secret { return Secret{&v} }

// Reveal returns the value.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]".
func (s Secret) GoString() string { return redacted }

// Format writes "[redacted]" whatever the verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON returns "[redacted]" as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText returns "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue returns "[redacted]" for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// UnmarshalJSON reads a JSON string.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("want a string")
	}
	s.p = &v
	return nil
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
}

type injectRule struct {
	host   entry
	header string
	value  Secret
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

// Network returns the network section of p, parsed. Never nil: without
// a section (or for a nil *Policy) it refuses every connection and says
// why.
func (p *Policy) Network() *Network {
	switch {
	case p == nil:
		return refusingNetwork("there is no network section in the policy (there is no policy)")
	case p.network != nil:
		return p.network
	case p.NetworkSection != nil:
		return refusingNetwork("the network section of the policy was not parsed" + p.SourceNote())
	default:
		return refusingNetwork("there is no network section in the policy" + p.SourceNote())
	}
}

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

// A networkError is an error in the network section, with what to look
// for in the file to tell where it is.
type networkError struct {
	key    string // the key under "network", e.g. "allow"
	needle string // the value as written, when the error is about one
	err    error
}

func (e *networkError) Error() string { return "network." + e.err.Error() }
func (e *networkError) Unwrap() error { return e.err }

func netErr(key, needle, format string, args ...any) error {
	return &networkError{key: key, needle: needle, err: fmt.Errorf(format, args...)}
}

// parseNetwork parses and checks s, substituting ${NAME} in inject
// values from lookup.
func parseNetwork(s *NetworkSection, lookup func(string) (string, bool)) (*Network, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	n := &Network{maxConns: defaultMaxConnections, maxBytes: defaultMaxBytesPerCall,
		connectTimeout: defaultConnectTimeout, idleTimeout: defaultIdleTimeout}
	var err error
	if n.allow, err = parseEntries("allow", s.Allow); err != nil {
		return nil, err
	}
	if n.deny, err = parseEntries("deny", s.Deny); err != nil {
		return nil, err
	}
	if len(s.Inject) > maxInjectRules {
		return nil, netErr("inject", "", "inject has %d rules; at most %d are allowed", len(s.Inject), maxInjectRules)
	}
	for i, spec := range s.Inject {
		r, err := parseInject(i, spec, lookup)
		if err != nil {
			return nil, err
		}
		n.inject = append(n.inject, r)
	}
	if v := s.MaxConnections; v != nil {
		if *v < 1 || *v > maxMaxConnections {
			return nil, netErr("max_connections", "", "max_connections is %d; want 1 to %d (absent: %d)", *v, maxMaxConnections, defaultMaxConnections)
		}
		n.maxConns = *v
	}
	if v := s.MaxBytesPerCall; v != nil {
		if *v < 1 || *v > maxMaxBytesPerCall {
			return nil, netErr("max_bytes_per_call", "", "max_bytes_per_call is %d; want 1 to %d (absent: %d)", *v, int64(maxMaxBytesPerCall), defaultMaxBytesPerCall)
		}
		n.maxBytes = *v
	}
	for _, t := range []struct {
		key string
		v   *float64
		d   *time.Duration
		def time.Duration
	}{
		{"connect_timeout", s.ConnectTimeout, &n.connectTimeout, defaultConnectTimeout},
		{"idle_timeout", s.IdleTimeout, &n.idleTimeout, defaultIdleTimeout},
	} {
		if t.v == nil {
			continue
		}
		if !(*t.v > 0 && *t.v <= maxTimeoutSeconds) {
			return nil, netErr(t.key, "", "%s is %v; want seconds, more than 0 and at most %d (absent: %v)", t.key, *t.v, maxTimeoutSeconds, t.def.Seconds())
		}
		*t.d = time.Duration(*t.v * float64(time.Second))
		if *t.d <= 0 {
			*t.d = 1 // a positive number of seconds below a nanosecond
		}
	}
	return n, nil
}

func parseEntries(key string, raws []string) ([]entry, error) {
	if len(raws) > maxPolicyPatterns {
		return nil, netErr(key, "", "%s has %d entries; at most %d are allowed", key, len(raws), maxPolicyPatterns)
	}
	out := make([]entry, 0, len(raws))
	for i, raw := range raws {
		e, err := parseEntry(raw)
		if err != nil {
			return nil, netErr(key, raw, "%s[%d] %q: %w", key, i, raw, err)
		}
		out = append(out, e)
	}
	return out, nil
}

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

// parseEntry parses an allow or deny entry.
func parseEntry(s string) (entry, error) {
	e := entry{raw: s}
	if s == "" {
		return e, errors.New("it is empty")
	}
	if len(s) > maxPatternLen {
		return e, fmt.Errorf("it is %d bytes; at most %d are allowed", len(s), maxPatternLen)
	}
	for _, c := range s {
		if c <= ' ' || c == 0x7f {
			return e, errors.New("it holds a space or a control character")
		}
		if c > 0x7e {
			return e, errors.New("it holds a non-ASCII character (write an international name in its xn-- form)")
		}
	}
	if strings.Contains(s, "://") {
		return e, errors.New("it has a scheme; write the host alone, with an optional :port")
	}
	host, port, hasPort, bracketed := s, "", false, false
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return e, errors.New("it opens a [ it does not close")
		}
		host, bracketed = s[1:end], true
		rest := s[end+1:]
		if strings.HasPrefix(rest, "/") { // [2001:db8::]/32:443
			bits := rest
			if i := strings.IndexByte(rest, ':'); i >= 0 {
				bits = rest[:i]
			}
			host, rest = host+bits, rest[len(bits):]
		}
		if rest != "" {
			if rest[0] != ':' {
				return e, errors.New("after ] may come only /bits and :port")
			}
			port, hasPort = rest[1:], true
		}
	case strings.Count(s, ":") >= 2:
		// An IPv6 address or CIDR without a port.
	default:
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, port, hasPort = s[:i], s[i+1:], true
		}
	}
	if hasPort {
		p, err := parsePort(port)
		if err != nil {
			return e, err
		}
		e.port = p
	}
	if host == "" {
		return e, errors.New("it names no host")
	}
	switch {
	case strings.ContainsAny(host, ":/") || bracketed || isAddr(host):
		if !strings.Contains(host, "/") {
			a, err := netip.ParseAddr(host)
			if err != nil {
				if strings.Count(s, ":") >= 2 && !bracketed {
					return e, errors.New("it is not an IPv6 address (one followed by a port is written in brackets: [2001:db8::1]:443)")
				}
				return e, errors.New("it is not an IP address")
			}
			if a.Zone() != "" {
				return e, errors.New("an address with a zone is not allowed")
			}
			host = host + "/" + strconv.Itoa(a.BitLen())
		}
		pfx, err := netip.ParsePrefix(host)
		if err != nil {
			if a, _, ok := strings.Cut(host, "/"); ok {
				if _, aerr := netip.ParseAddr(a); aerr != nil {
					return e, errors.New("it holds a path or is not a valid CIDR; write the host alone, with an optional :port")
				}
			}
			return e, fmt.Errorf("it is not a valid CIDR: %v", err)
		}
		if pfx.Masked() != pfx {
			return e, fmt.Errorf("the CIDR has bits set after its prefix; write %s", pfx.Masked())
		}
		if bracketed && !pfx.Addr().Is6() {
			return e, errors.New("brackets are only for IPv6 addresses")
		}
		e.kind, e.prefix = kindPrefix, pfx
	case strings.Contains(host, "*"):
		if host == "*" || host == "*." {
			return e, errors.New("a lone * would allow every host; list the hosts")
		}
		rest, ok := strings.CutPrefix(host, "*.")
		if !ok || strings.Contains(rest, "*") {
			return e, errors.New("* is allowed only as a leading *. (*.example.org)")
		}
		name := normalizeName(rest)
		if err := checkName(name); err != nil {
			return e, err
		}
		if IsNumericIPv4Spelling(name) {
			return e, errors.New("its suffix is a numeric IPv4 spelling, not a host name")
		}
		e.kind, e.name = kindGlob, "."+name
	default:
		if IsNumericIPv4Spelling(host) {
			return e, errors.New("it is a numeric spelling of an IPv4 address, not a host name; write the address as four decimal numbers (127.0.0.1)")
		}
		name := normalizeName(host)
		if err := checkName(name); err != nil {
			return e, err
		}
		e.kind, e.name = kindName, name
	}
	return e, nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func parsePort(s string) (int, error) {
	if s == "" {
		return 0, errors.New("its port is empty")
	}
	if len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("its port %q is not a number from 1 to 65535", s)
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("its port %d is not from 1 to 65535", p)
	}
	return p, nil
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

func (n *Network) matchingInject(host string, port int) []*injectRule {
	if n.refuseAll != "" || len(n.inject) == 0 || host == "" || IsNumericIPv4Spelling(host) {
		return nil
	}
	if h, ok := strings.CutPrefix(host, "["); ok {
		host = strings.TrimSuffix(h, "]")
	}
	a, err := netip.ParseAddr(host)
	isIP := err == nil
	name := normalizeName(host)
	var out []*injectRule
	for i := range n.inject {
		r := &n.inject[i]
		if !r.host.portMatches(port, false) {
			continue
		}
		if isIP && r.host.matchAddr(a) || !isIP && r.host.matchName(name) {
			out = append(out, r)
		}
	}
	return out
}

// hopByHop are headers an inject rule may not set (lower case); every
// Proxy-* header is refused too.
var hopByHop = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"upgrade": true, "te": true, "trailer": true, "keep-alive": true,
}

func parseInject(i int, spec InjectSpec, lookup func(string) (string, bool)) (injectRule, error) {
	where := fmt.Sprintf("inject[%d]", i)
	if spec.Host == "" {
		return injectRule{}, netErr("inject", "", "%s: host is missing", where)
	}
	h, err := parseEntry(spec.Host)
	if err != nil {
		return injectRule{}, netErr("inject", spec.Host, "%s: host %q: %w", where, spec.Host, err)
	}
	where = fmt.Sprintf("inject[%d] (host %q)", i, spec.Host)
	if spec.Header == "" {
		return injectRule{}, netErr("inject", spec.Host, "%s: header is missing", where)
	}
	if !isToken(spec.Header) {
		return injectRule{}, netErr("inject", spec.Header, "%s: header %q is not a valid header field name", where, spec.Header)
	}
	if lh := strings.ToLower(spec.Header); hopByHop[lh] || strings.HasPrefix(lh, "proxy-") {
		return injectRule{}, netErr("inject", spec.Header, "%s: header %q is a hop-by-hop or framing header; it cannot be injected", where, spec.Header)
	}
	if spec.Value.p == nil {
		return injectRule{}, netErr("inject", spec.Host, "%s: value is missing", where)
	}
	v, err := expandEnv(spec.Value.Reveal(), lookup)
	if err != nil {
		return injectRule{}, netErr("inject", spec.Host, "%s: value: %w", where, err)
	}
	if v == "" {
		return injectRule{}, netErr("inject", spec.Host, "%s: value is empty", where)
	}
	if badValueByte(v) {
		return injectRule{}, netErr("inject", spec.Host, "%s: value holds a control character (CR, LF, NUL or another); it is not shown", where)
	}
	return injectRule{host: h, header: spec.Header, value: NewSecret(v)}, nil
}

// isToken reports whether s is an HTTP token (RFC 9110 tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// badValueByte reports whether v holds a byte a header value may not:
// a control character other than a tab (CR, LF and NUL among them) or DEL.
func badValueByte(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

// expandEnv substitutes each ${NAME} in s from lookup. A name that is
// not set, is empty or holds a control character is an error naming
// it, never showing a value; "$" not followed by "{" stays as written.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", errors.New("a ${ is not closed by }")
		}
		name := s[:end]
		s = s[end+1:]
		if !isEnvName(name) {
			return "", fmt.Errorf("${%.40s} does not name an environment variable (want letters, digits and _, not first a digit)", name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("the environment variable %s is not set", name)
		}
		if v == "" {
			return "", fmt.Errorf("the environment variable %s is empty", name)
		}
		if badValueByte(v) {
			return "", fmt.Errorf("the environment variable %s holds a control character (CR, LF, NUL or another); its value is not shown", name)
		}
		b.WriteString(v)
	}
}

func isEnvName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func refuse(rule, reason string) Decision { return Decision{Rule: rule, Reason: reason} }

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
