package policy

// The parsing of the policy's network section: its entries, inject rules
// and bounds, each error naming its key and, where it can be found, its
// place in the file.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	v, expansions, err := expandEnv(spec.Value.Reveal(), lookup)
	var missing *missingVarError
	if errors.As(err, &missing) {
		// One missing secret disables its rule, not the policy.
		return injectRule{host: h, header: spec.Header, disabled: missing.Error()}, nil
	}
	if err != nil {
		return injectRule{}, netErr("inject", spec.Host, "%s: value: %w", where, err)
	}
	if v == "" {
		return injectRule{}, netErr("inject", spec.Host, "%s: value is empty", where)
	}
	if badValueByte(v) {
		return injectRule{}, netErr("inject", spec.Host, "%s: value holds a control character (CR, LF, NUL or another); it is not shown", where)
	}
	return injectRule{host: h, header: spec.Header, value: NewSecret(v), masks: maskValues(v, expansions)}, nil
}

// minWholeMask is the least length of a whole header value masked in
// answers (besides its ${NAME} expansions, always masked): shorter
// values written in the file ("v3", "json") are ordinary text.
const minWholeMask = 8

// maskValues returns what the gateway masks in the answers of a rule's
// hosts: each ${NAME} expansion of its value v, and v itself when it is
// minWholeMask bytes or more; each once, longest first.
func maskValues(v string, expansions []string) []Secret {
	vals := slices.Clone(expansions)
	if len(v) >= minWholeMask {
		vals = append(vals, v)
	}
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	vals = slices.Compact(vals)
	out := make([]Secret, len(vals))
	for i, x := range vals {
		out[i] = NewSecret(x)
	}
	return out
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

// A missingVarError is expandEnv's error for a ${NAME} whose variable is
// not set or is empty: an inject rule with one is disabled, not an error
// of the policy.
type missingVarError struct {
	name  string
	empty bool // set, but to ""
}

func (e *missingVarError) Error() string {
	if e.empty {
		return "the environment variable " + e.name + " is empty"
	}
	return "the environment variable " + e.name + " is not set"
}

// expandEnv substitutes each ${NAME} in s from lookup and returns the
// result and the values substituted. A name that is not set or is empty
// is a *missingVarError; one that holds a control character is an error
// naming it, never showing a value; "$" not followed by "{" stays as
// written.
func expandEnv(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var b strings.Builder
	var expansions []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), expansions, nil
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", nil, errors.New("a ${ is not closed by }")
		}
		name := s[:end]
		s = s[end+1:]
		if !isEnvName(name) {
			return "", nil, fmt.Errorf("${%.40s} does not name an environment variable (want letters, digits and _, not first a digit)", name)
		}
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", nil, &missingVarError{name: name, empty: ok}
		}
		if badValueByte(v) {
			return "", nil, fmt.Errorf("the environment variable %s holds a control character (CR, LF, NUL or another); its value is not shown", name)
		}
		b.WriteString(v)
		expansions = append(expansions, v)
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
