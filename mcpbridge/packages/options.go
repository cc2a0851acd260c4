package packages

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultIndexURL is the index pip uses when none is set: the public
// Python Package Index.
const DefaultIndexURL = "https://pypi.org/simple/"

// Defaults of Options' zero values.
const (
	defaultCacheMaxBytes   = 10 << 30
	defaultSessionMaxBytes = 256 << 20
)

// Options are a bridge's package settings; every zero value means the
// documented default.
type Options struct {
	// Requirements are what every sandbox has importable from its first
	// call (MCP_BRIDGE_PACKAGES or MCP_BRIDGE_PACKAGES_FILE). Zero: none.
	Requirements []Requirement
	// IndexURL is the index pip installs from (MCP_BRIDGE_PIP_INDEX_URL).
	// Zero: DefaultIndexURL.
	IndexURL string
	// ExtraIndexURLs are more indexes pip looks in
	// (MCP_BRIDGE_PIP_EXTRA_INDEX_URL). Zero: none.
	ExtraIndexURLs []string
	// ExtraFileHosts are the hosts ("host:port") where an index other than
	// PyPI keeps the files its pages link (MCP_BRIDGE_PIP_FILE_HOSTS, a
	// port of 443 when none is written): installs reach them too, never
	// with a secret. Zero: none (PyPI's files.pythonhosted.org comes with
	// PyPI).
	ExtraFileHosts []string
	// AllowSdist lets pip build packages that have no wheel, running
	// their build code (MCP_BRIDGE_PIP_ALLOW_SDIST). Zero: wheels only.
	AllowSdist bool
	// CacheMaxBytes is how much the engine's package volumes may hold
	// before the least recently used are removed
	// (MCP_BRIDGE_PACKAGES_CACHE_MAX). Zero: 10 GiB.
	CacheMaxBytes int64
	// SessionMaxBytes bounds what runtime.install puts in one sandbox
	// (MCP_BRIDGE_PACKAGES_SESSION_MAX): a tmpfs, so it counts against
	// the sandbox's memory. Zero: 256 MiB.
	SessionMaxBytes int64
	// PipWheel is the pip wheel on the bridge's host that sandboxes run
	// pip from, whatever their image has (MCP_BRIDGE_PIP_WHEEL). Zero:
	// the image's own pip, else PinnedPip, fetched from the indexes.
	PipWheel string
	// WheelDir is where PinnedPip is kept once fetched (the state
	// directory's "pip"). Zero: not kept; each bridge fetches it.
	WheelDir string
}

// Index returns the index URL in force.
func (o *Options) Index() string {
	if o == nil || o.IndexURL == "" {
		return DefaultIndexURL
	}
	return o.IndexURL
}

// CacheMax returns the package volumes' bound in bytes.
func (o *Options) CacheMax() int64 {
	if o == nil || o.CacheMaxBytes <= 0 {
		return defaultCacheMaxBytes
	}
	return o.CacheMaxBytes
}

// SessionMax returns the bound of one sandbox's live installs in bytes.
func (o *Options) SessionMax() int64 {
	if o == nil || o.SessionMaxBytes <= 0 {
		return defaultSessionMaxBytes
	}
	return o.SessionMaxBytes
}

// CheckFileHost checks s, a file host as MCP_BRIDGE_PIP_FILE_HOSTS
// names it ("files.example.org", "10.0.0.5:8443", "[2001:db8::1]:443"),
// and returns it as "host:port", 443 when no port is written.
func CheckFileHost(s string) (string, error) {
	if strings.ContainsAny(s, "/@ \t") || s == "" {
		return "", fmt.Errorf("%q: a file host is a host name or address with an optional :port, no scheme or path", s)
	}
	host, port := s, "443"
	switch {
	case strings.HasPrefix(s, "["):
		if h, p, err := net.SplitHostPort(s); err == nil {
			host, port = h, p
		} else if strings.HasSuffix(s, "]") {
			host = s[1 : len(s)-1]
		}
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return "", fmt.Errorf("%q: want an IPv6 address in brackets, with an optional :port", s)
		}
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
	case strings.Contains(s, ":"):
		return "", fmt.Errorf("%q: write an IPv6 address in brackets (\"[2001:db8::1]:443\")", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: the port is not from 1 to 65535", s)
	}
	if host == "" || strings.ContainsAny(host, "[]") {
		return "", fmt.Errorf("%q: want a host name or address, with an optional :port", s)
	}
	return net.JoinHostPort(strings.ToLower(host), strconv.Itoa(n)), nil
}

// CheckIndexURL reports whether s can be an index URL: http or https, a
// host, no credentials (they go in the policy's inject rules, added by
// the gateway, never seen by the sandbox), no query or fragment.
func CheckIndexURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: an index URL is http:// or https://", s)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q: an index URL names a host", s)
	case u.User != nil:
		return fmt.Errorf("%q: credentials do not go in the index URL: add them with an inject rule of the policy's network section, so the sandbox never sees them", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: an index URL has no query or fragment", s)
	}
	return nil
}

// IndexHosts returns the hosts ("host:port") of the indexes installs
// use: the only ones an install gives a secret to (an inject rule's).
func (o *Options) IndexHosts() []string {
	var hosts []string
	for _, raw := range append([]string{o.Index()}, o.ExtraIndexURLs...) {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		hosts = append(hosts, net.JoinHostPort(u.Hostname(), port))
	}
	return hosts
}

// FileHosts returns the hosts ("host:port") the indexes keep their
// files on, which installs reach too: PyPI's with PyPI, and
// ExtraFileHosts.
func (o *Options) FileHosts() []string {
	var hosts []string
	for _, raw := range append([]string{o.Index()}, o.ExtraIndexURLs...) {
		if u, err := url.Parse(raw); err == nil && strings.EqualFold(u.Hostname(), "pypi.org") {
			hosts = append(hosts, "files.pythonhosted.org:443")
			break
		}
	}
	return append(hosts, o.ExtraFileHosts...)
}
