package policy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// env is a fake environment, so that no test depends on the real one.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const secretToken = "ghp_SECRETsecret123"

func mustNetwork(t *testing.T, section string, lookup func(string) (string, bool)) *Network {
	t.Helper()
	p, err := parseWith([]byte(`{"network": `+section+`}`), "p.json", lookup)
	if err != nil {
		t.Fatalf("parse %s: %v", section, err)
	}
	return p.Network()
}

func TestParseEntry(t *testing.T) {
	for _, tt := range []struct {
		in      string
		kind    int
		name    string
		prefix  string
		port    int
		wantErr string
	}{
		{in: "api.github.com", kind: kindName, name: "api.github.com"},
		{in: "API.GitHub.COM.", kind: kindName, name: "api.github.com"},
		{in: "api.github.com:8443", kind: kindName, name: "api.github.com", port: 8443},
		{in: "localhost", kind: kindName, name: "localhost"},
		{in: "under_score.example", kind: kindName, name: "under_score.example"},
		{in: "*.example.org", kind: kindGlob, name: ".example.org"},
		{in: "*.Example.ORG.:8443", kind: kindGlob, name: ".example.org", port: 8443},
		{in: "10.1.2.0/24:443", kind: kindPrefix, prefix: "10.1.2.0/24", port: 443},
		{in: "127.0.0.1:8080", kind: kindPrefix, prefix: "127.0.0.1/32", port: 8080},
		{in: "127.0.0.1", kind: kindPrefix, prefix: "127.0.0.1/32"},
		{in: "[2001:db8::1]:443", kind: kindPrefix, prefix: "2001:db8::1/128", port: 443},
		{in: "[2001:db8::1]", kind: kindPrefix, prefix: "2001:db8::1/128"},
		{in: "2001:db8::1", kind: kindPrefix, prefix: "2001:db8::1/128"},
		{in: "::1", kind: kindPrefix, prefix: "::1/128"},
		{in: "fe80::/10", kind: kindPrefix, prefix: "fe80::/10"},
		{in: "[2001:db8::]/32:443", kind: kindPrefix, prefix: "2001:db8::/32", port: 443},
		{in: "[2001:db8::/32]:443", kind: kindPrefix, prefix: "2001:db8::/32", port: 443},
		{in: "::ffff:127.0.0.1", kind: kindPrefix, prefix: "::ffff:127.0.0.1/128"},
		{in: "x.org:1", kind: kindName, name: "x.org", port: 1},
		{in: "x.org:65535", kind: kindName, name: "x.org", port: 65535},

		{in: "", wantErr: "it is empty"},
		{in: "x.org:0", wantErr: "port 0 is not from 1 to 65535"},
		{in: "x.org:65536", wantErr: "port 65536"},
		{in: "x.org:", wantErr: "port is empty"},
		{in: "x.org:https", wantErr: `port "https"`},
		{in: "x.org:-1", wantErr: `port "-1"`},
		{in: "x.org:+80", wantErr: `port "+80"`},
		{in: "10.1.2.0/33", wantErr: "not a valid CIDR"},
		{in: "10.1.2.3/24", wantErr: "write 10.1.2.0/24"},
		{in: "10.1.2.0/x", wantErr: "not a valid CIDR"},
		{in: "*", wantErr: "a lone *"},
		{in: "*:443", wantErr: "a lone *"},
		{in: "*.", wantErr: "a lone *"},
		{in: "a.*.org", wantErr: "only as a leading *."},
		{in: "*example.org", wantErr: "only as a leading *."},
		{in: "*.*.org", wantErr: "only as a leading *."},
		{in: "ex*.org", wantErr: "only as a leading *."},
		{in: "*.1.2", wantErr: "numeric IPv4"},
		{in: "api .github.com", wantErr: "space"},
		{in: " api.github.com", wantErr: "space"},
		{in: "api.github.com\t", wantErr: "space"},
		{in: "https://api.github.com", wantErr: "scheme"},
		{in: "api.github.com/repos", wantErr: "path"},
		{in: "api.github.com:443/repos", wantErr: `port "443/repos"`},
		{in: "api.github.com?x", wantErr: "path"},
		{in: "user@api.github.com", wantErr: "not a host name"},
		{in: "a..b", wantErr: "label is empty"},
		{in: strings.Repeat("a", 64) + ".org", wantErr: "longer than 63"},
		{in: "bücher.example", wantErr: "non-ASCII"},
		{in: "2130706433", wantErr: "numeric spelling"},
		{in: "0x7f.1", wantErr: "numeric spelling"},
		{in: "017700000001", wantErr: "numeric spelling"},
		{in: "127.1", wantErr: "numeric spelling"},
		{in: "127.1:8080", wantErr: "numeric spelling"},
		{in: "0177.0.0.1", wantErr: "numeric spelling"},
		{in: "127.0.0.1.", wantErr: "numeric spelling"},
		{in: "2001:db8::1:443", kind: kindPrefix, prefix: "2001:db8::1:443/128"}, // no brackets: all of it is the address
		{in: "2001:db8::zz:443", wantErr: "in brackets"},
		{in: "[2001:db8::1", wantErr: "does not close"},
		{in: "[2001:db8::1]443", wantErr: "after ]"},
		{in: "[10.0.0.1]:443", wantErr: "only for IPv6"},
		{in: "[example.org]:443", wantErr: "not an IP address"},
		{in: "fe80::1%eth0", wantErr: "zone"},
		{in: "[fe80::1%eth0]:443", wantErr: "zone"},
		{in: strings.Repeat("a.", 200) + "org", wantErr: "at most 256"},
	} {
		e, err := parseEntry(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseEntry(%q): %v, want error %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseEntry(%q): %v", tt.in, err)
			continue
		}
		var pfx netip.Prefix
		if tt.prefix != "" {
			pfx = netip.MustParsePrefix(tt.prefix)
		}
		if e.kind != tt.kind || e.name != tt.name || e.prefix != pfx || e.port != tt.port || e.raw != tt.in {
			t.Errorf("parseEntry(%q) = %+v, want kind %d name %q prefix %v port %d", tt.in, e, tt.kind, tt.name, pfx, tt.port)
		}
	}
}

func TestIsNumericIPv4Spelling(t *testing.T) {
	for host, want := range map[string]bool{
		"2130706433": true, "0x7f.1": true, "017700000001": true, "127.1": true, "0x7f000001": true,
		"0177.0.0.1": true, "127.0.0.1.": true, "0X7F.0.0.1": true, "1.2.3.4.5": true, "0x": true, "example.0x1f": true,
		"127.0.0.1": false, "8.8.8.8": false, "example.org": false, "0x7f.example.org": false, "a1": false,
		"example.org.": false, "::1": false, "2001:db8::1": false, "": false, "1a.2b": false, "x.0xg": false,
	} {
		if got := IsNumericIPv4Spelling(host); got != want {
			t.Errorf("IsNumericIPv4Spelling(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestNetworkCheckName(t *testing.T) {
	n := mustNetwork(t, `{
		"allow": ["api.github.com", "*.example.org:8443", "10.1.2.0/24:443", "127.0.0.1:8080", "[2001:db8::1]:443",
		          "open.example.net", "*.glob.test", "8.8.8.8", "[2606:4700::]/32:443"],
		"deny": ["internal.example.org", "*.secret.example.org:8443", "bad.glob.test:443", "10.1.2.99"]}`, env())
	for _, tt := range []struct {
		host   string
		port   int
		allow  bool
		rule   string
		reason string
	}{
		{"api.github.com", 443, true, "api.github.com", ""},
		{"api.github.com", 80, true, "api.github.com", ""},
		{"API.GitHub.com.", 443, true, "api.github.com", ""},
		{"api.github.com", 8443, false, "", "api.github.com:8443 is not allowed by the network policy"},
		{"api.github.com", 22, false, "", "not allowed by the network policy"},
		{"github.com", 443, false, "", "not allowed"},
		{"evil-api.github.com", 443, false, "", "not allowed"},
		// Globs: any depth, not the apex, only their port.
		{"a.example.org", 8443, true, "*.example.org:8443", ""},
		{"a.b.c.example.org", 8443, true, "*.example.org:8443", ""},
		{"example.org", 8443, false, "", "not allowed"},
		{"a.example.org", 443, false, "", "not allowed"},
		{"aexample.org", 8443, false, "", "not allowed"},
		{"x.glob.test", 443, true, "*.glob.test", ""},
		{"glob.test", 443, false, "", "not allowed"},
		// Deny wins; a deny entry without a port denies every port.
		{"internal.example.org", 8443, false, "internal.example.org", `internal.example.org:8443 is denied by "internal.example.org"`},
		{"Internal.Example.org.", 443, false, "internal.example.org", `denied by "internal.example.org"`},
		{"a.secret.example.org", 8443, false, "*.secret.example.org:8443", `denied by "*.secret.example.org:8443"`},
		{"bad.glob.test", 443, false, "bad.glob.test:443", "denied"},
		{"bad.glob.test", 80, true, "*.glob.test", ""},
		// IP literals: only IP and CIDR entries, on their ports.
		{"10.1.2.3", 443, true, "10.1.2.0/24:443", ""},
		{"10.1.2.3", 80, false, "", "10.1.2.3 is a private address"},
		{"10.1.2.99", 443, false, "10.1.2.99", `10.1.2.99 is denied by "10.1.2.99"`},
		{"10.1.3.1", 443, false, "", "10.1.3.1 is a private address"},
		{"127.0.0.1", 8080, true, "127.0.0.1:8080", ""},
		{"127.0.0.1", 443, false, "", "127.0.0.1 is a loopback address"},
		{"2001:db8::1", 443, true, "[2001:db8::1]:443", ""},
		{"[2001:db8::1]", 443, true, "[2001:db8::1]:443", ""},
		{"2001:db8::2", 443, false, "", "2001:db8::2 is a documentation address"},
		{"8.8.8.8", 443, true, "8.8.8.8", ""},
		{"8.8.4.4", 443, false, "", "8.8.4.4:443 is not allowed by the network policy"},
		{"2606:4700::1111", 443, true, "[2606:4700::]/32:443", ""},
		{"2606:4700::1111", 80, false, "", "[2606:4700::1111]:80 is not allowed"},
		// Numeric spellings are never names.
		{"2130706433", 443, false, "", "numeric spelling"},
		{"0x7f.1", 8080, false, "", "numeric spelling"},
		{"017700000001", 8080, false, "", "numeric spelling"},
		{"127.1", 8080, false, "", "numeric spelling"},
		{"127.0.0.1.", 8080, false, "", "numeric spelling"},
		// Malformed.
		{"", 443, false, "", "no host"},
		{"api.github.com", 0, false, "", "port 0"},
		{"api.github.com", 70000, false, "", "port 70000"},
		{"api github.com", 443, false, "", "not a valid host name"},
		{"fe80::1%eth0", 443, false, "", "zone"},
		{"api.github.com:443", 443, false, "", "not a host name or an IP address"},
	} {
		d := n.CheckName(tt.host, tt.port)
		if d.Allowed != tt.allow || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) || tt.allow && d.Reason != "" {
			t.Errorf("CheckName(%q, %d) = %+v, want allowed %v rule %q reason ~%q", tt.host, tt.port, d, tt.allow, tt.rule, tt.reason)
		}
	}
}

func TestNetworkCheckAddr(t *testing.T) {
	n := mustNetwork(t, `{
		"allow": ["api.github.com", "localhost:8080", "127.0.0.1:8080", "*.corp.test", "10.0.0.0/8:443",
		          "[::ffff:10.0.0.0]/104:443", "[2002::]/16", "[2001:db8::]/32"],
		"deny": ["10.9.0.0/16", "93.184.215.14", "[2001:db8:dead::]/48"]}`, env())
	a := netip.MustParseAddr
	for _, tt := range []struct {
		host   string
		port   int
		addr   string
		allow  bool
		rule   string
		reason string
	}{
		{"api.github.com", 443, "140.82.121.6", true, "api.github.com", ""},
		{"api.github.com", 443, "2606:50c0:8000::154", true, "api.github.com", ""},
		// A name entry never allows a special address.
		{"api.github.com", 443, "127.0.0.1", false, "", "127.0.0.1 (api.github.com) is a loopback address"},
		{"localhost", 8080, "127.0.0.1", true, "127.0.0.1:8080", ""},
		{"localhost", 8080, "::1", false, "", "::1 (localhost) is a loopback address"},
		{"localhost", 8080, "127.0.0.2", false, "", "loopback"},
		{"x.corp.test", 443, "10.1.1.1", true, "10.0.0.0/8:443", ""},
		{"x.corp.test", 80, "10.1.1.1", false, "", "private"},
		{"x.corp.test", 443, "10.9.1.1", false, "10.9.0.0/16", `is denied by "10.9.0.0/16"`},
		{"x.corp.test", 443, "93.184.215.14", false, "93.184.215.14", "denied"},
		{"x.corp.test", 443, "169.254.169.254", false, "", "169.254.169.254 (x.corp.test) is a link-local address (cloud metadata)"},
		// Embedded IPv4: judged as itself and as that IPv4 address.
		{"x.corp.test", 443, "::ffff:10.1.1.1", true, "10.0.0.0/8:443", ""},
		{"x.corp.test", 443, "::ffff:127.0.0.1", false, "", "IPv4-mapped"},
		{"x.corp.test", 443, "::ffff:10.9.0.1", false, "10.9.0.0/16", "10.9.0.1 (embedded in ::ffff:10.9.0.1) (x.corp.test) is denied"},
		{"x.corp.test", 443, "::ffff:93.184.215.14", false, "93.184.215.14", "denied"},
		{"x.corp.test", 443, "::ffff:8.8.8.8", false, "", "IPv4-mapped"},
		{"x.corp.test", 443, "64:ff9b::8.8.8.8", false, "", "NAT64"},
		{"x.corp.test", 443, "2002:0808:0808::1", true, "[2002::]/16", ""},
		{"x.corp.test", 443, "2002:7f00:0001::1", false, "", "127.0.0.1 (embedded in 2002:7f00:1::1) (x.corp.test) is a loopback"},
		{"x.corp.test", 443, "2002:0a09:0001::1", false, "10.9.0.0/16", "denied"},
		{"x.corp.test", 443, "2001:db8::5", true, "[2001:db8::]/32", ""},
		{"x.corp.test", 443, "2001:db8:dead::5", false, "[2001:db8:dead::]/48", "denied"},
		{"x.corp.test", 443, "fe80::1%eth0", false, "", "zone"},
		// An IP host: the address must be the host.
		{"127.0.0.1", 8080, "127.0.0.1", true, "127.0.0.1:8080", ""},
		{"127.0.0.1", 8080, "10.0.0.1", false, "", "is not the host"},
		{"", 8080, "127.0.0.1", true, "127.0.0.1:8080", ""},
		{"", 443, "8.8.8.8", false, "", "not allowed"},
		// CheckName runs first.
		{"evil.test", 443, "8.8.8.8", false, "", "evil.test:443 is not allowed"},
		{"2130706433", 8080, "127.0.0.1", false, "", "numeric spelling"},
	} {
		d := n.CheckAddr(tt.host, tt.port, a(tt.addr))
		if d.Allowed != tt.allow || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) {
			t.Errorf("CheckAddr(%q, %d, %s) = %+v, want allowed %v rule %q reason ~%q", tt.host, tt.port, tt.addr, d, tt.allow, tt.rule, tt.reason)
		}
	}
	if d := n.CheckAddr("api.github.com", 443, netip.Addr{}); d.Allowed {
		t.Error("an invalid address is allowed")
	}
}

// Each special range is refused for an allowed name, and allowed by an
// IP or CIDR entry containing it, on its port only.
func TestNetworkSpecialRanges(t *testing.T) {
	for _, tt := range []struct{ addr, what, cidr string }{
		{"127.0.0.1", "loopback", "127.0.0.0/8"},
		{"127.255.255.254", "loopback", "127.0.0.0/8"},
		{"::1", "loopback", "::1/128"},
		{"10.1.2.3", "private", "10.0.0.0/8"},
		{"172.16.0.1", "private", "172.16.0.0/12"},
		{"172.31.255.255", "private", "172.16.0.0/12"},
		{"192.168.1.1", "private", "192.168.0.0/16"},
		{"fd00::1", "unique local", "fc00::/7"},
		{"100.64.0.1", "shared", "100.64.0.0/10"},
		{"100.127.255.255", "shared", "100.64.0.0/10"},
		{"169.254.169.254", "link-local", "169.254.0.0/16"},
		{"169.254.1.1", "link-local", "169.254.0.0/16"},
		{"fe80::1", "link-local", "fe80::/10"},
		{"0.1.2.3", "this network", "0.0.0.0/8"},
		{"0.0.0.0", "unspecified", "0.0.0.0/8"},
		{"::", "unspecified", "::/128"},
		{"198.18.0.1", "benchmarking", "198.18.0.0/15"},
		{"198.19.255.255", "benchmarking", "198.18.0.0/15"},
		{"240.0.0.1", "reserved", "240.0.0.0/4"},
		{"255.255.255.255", "broadcast", "255.255.255.255/32"},
		{"224.0.0.1", "multicast", "224.0.0.0/4"},
		{"239.255.255.250", "multicast", "224.0.0.0/4"},
		{"ff02::1", "multicast", "ff00::/8"},
		{"192.0.2.1", "documentation", "192.0.2.0/24"},
		{"198.51.100.1", "documentation", "198.51.100.0/24"},
		{"203.0.113.1", "documentation", "203.0.113.0/24"},
		{"2001:db8::1", "documentation", "2001:db8::/32"},
		{"192.0.0.170", "IETF protocol", "192.0.0.0/24"},
		{"::ffff:8.8.8.8", "IPv4-mapped", "::ffff:0:0/96"},
		{"64:ff9b::808:808", "NAT64", "64:ff9b::/96"},
		{"2002:808:808::1", "6to4", "2002::/16"},
		{"2001:0:1:2::1", "Teredo", "2001::/32"},
		{"fec0::1", "site-local", "fec0::/10"},
		{"100::1", "discard-only", "100::/64"},
		{"4000::1", "reserved IPv6", "4000::/3"},
	} {
		addr := netip.MustParseAddr(tt.addr)
		if s := special(addr); !strings.Contains(s, tt.what) {
			t.Errorf("special(%s) = %q, want ~%q", tt.addr, s, tt.what)
		}
		host := addr.String()
		bracket := func(s string) string {
			if strings.Contains(s, ":") {
				return "[" + s + "]"
			}
			return s
		}
		// A name entry does not allow it.
		byName := mustNetwork(t, `{"allow": ["svc.test:9000"]}`, env())
		if d := byName.CheckAddr("svc.test", 9000, addr); d.Allowed || !strings.Contains(d.Reason, tt.what) {
			t.Errorf("%s for an allowed name: %+v", tt.addr, d)
		}
		// The address or a CIDR containing it does, on its port.
		for _, allow := range []string{bracket(tt.addr) + ":9000", bracket(tt.cidr) + ":9000"} {
			if strings.Contains(tt.cidr, ":") {
				p := netip.MustParsePrefix(tt.cidr)
				if allow != bracket(tt.addr)+":9000" {
					allow = "[" + p.Addr().String() + "]/" + fmt.Sprint(p.Bits()) + ":9000"
				}
			}
			// An embedded IPv4 address must be allowed too.
			extra := ""
			if v4, ok := EmbeddedIPv4(addr); ok {
				extra = `, "` + v4.String() + `:9000"`
			}
			nw := mustNetwork(t, `{"allow": ["svc.test:9000", "`+allow+`"`+extra+`]}`, env())
			if d := nw.CheckAddr("svc.test", 9000, addr); !d.Allowed || d.Rule == "" || d.Rule == "svc.test:9000" && !strings.Contains(extra, d.Rule) {
				t.Errorf("%s allowed by %s: %+v", tt.addr, allow, d)
			}
			if d := nw.CheckName(host, 9000); !d.Allowed {
				t.Errorf("%s as a host, allowed by %s: %+v", tt.addr, allow, d)
			}
			if d := nw.CheckAddr("svc.test", 9001, addr); d.Allowed {
				t.Errorf("%s allowed by %s on another port: %+v", tt.addr, allow, d)
			}
			if d := nw.CheckName(host, 443); d.Allowed {
				t.Errorf("%s as a host allowed by %s on another port: %+v", tt.addr, allow, d)
			}
		}
	}
	// Public addresses are not special.
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "140.82.121.6", "2606:4700::1111", "2a00:1450:4001::1"} {
		if w := special(netip.MustParseAddr(s)); w != "" {
			t.Errorf("special(%s) = %q", s, w)
		}
	}
}

func TestEmbeddedIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:127.0.0.1": "127.0.0.1", "64:ff9b::7f00:1": "127.0.0.1", "2002:7f00:1::": "127.0.0.1",
		"::10.0.0.1": "10.0.0.1", "::1": "", "::": "", "2001:db8::1": "", "10.0.0.1": "",
	} {
		got, ok := EmbeddedIPv4(netip.MustParseAddr(in))
		if ok != (want != "") || ok && got.String() != want {
			t.Errorf("EmbeddedIPv4(%s) = %v %v, want %q", in, got, ok, want)
		}
	}
}

func TestNetworkInject(t *testing.T) {
	n := mustNetwork(t, `{"allow": ["api.github.com"], "inject": [
		{"host": "api.github.com", "header": "Authorization", "value": "Bearer ${GITHUB_TOKEN}"},
		{"host": "*.example.org:8443", "header": "X-Api-Key", "value": "${A}-${B}"},
		{"host": "api.github.com", "header": "X-Plain", "value": "literal $HOME $ {x}"},
		{"host": "10.0.0.0/8:443", "header": "X-Net", "value": "n"},
		{"host": "[2001:db8::1]:443", "header": "X-Six", "value": "six"}]}`,
		env("GITHUB_TOKEN", secretToken, "A", "a", "B", "b"))
	names := func(hs []Header) string {
		var s []string
		for _, h := range hs {
			s = append(s, h.Name+"="+h.Value.Reveal())
		}
		return strings.Join(s, ";")
	}
	for _, tt := range []struct {
		host string
		port int
		want string
	}{
		{"api.github.com", 443, "Authorization=Bearer " + secretToken + ";X-Plain=literal $HOME $ {x}"},
		{"API.github.com.", 443, "Authorization=Bearer " + secretToken + ";X-Plain=literal $HOME $ {x}"},
		{"api.github.com", 80, ""}, // a rule without a port never adds its secret in plain text
		{"api.github.com", 8443, ""},
		{"x.example.org", 8443, "X-Api-Key=a-b"},
		{"example.org", 8443, ""},
		{"x.example.org", 443, ""},
		{"10.2.3.4", 443, "X-Net=n"},
		{"2001:db8::1", 443, "X-Six=six"},
		{"[2001:db8::1]", 443, "X-Six=six"},
		{"167772161", 443, ""}, // 10.0.0.1 spelled as a number
		{"other.test", 443, ""},
		{"", 443, ""},
	} {
		got := n.Inject(tt.host, tt.port)
		if names(got) != tt.want || n.HasInject(tt.host, tt.port) != (tt.want != "") {
			t.Errorf("Inject(%q, %d) = %q, want %q", tt.host, tt.port, names(got), tt.want)
		}
	}
	if (*Policy)(nil).Network().HasInject("api.github.com", 443) {
		t.Error("no policy injects")
	}
}

// TestNetworkInjectMissingSecret: a rule whose ${NAME} is unset or empty
// disables itself, not the policy: its host is refused with a reason
// naming the variable, it adds nothing, the other rules and entries
// keep working, and the summary names it; a variable holding CR or LF
// stays an error of the policy.
func TestNetworkInjectMissingSecret(t *testing.T) {
	e := env("GITHUB_TOKEN", secretToken, "EMPTY", "")
	p, err := parseWith([]byte(`{"network": {"allow": ["api.github.com", "api.other.test", "pypi.org"], "inject": [
		{"host": "api.github.com", "header": "Authorization", "value": "Bearer ${GITHUB_TOKEN}"},
		{"host": "api.other.test", "header": "Authorization", "value": "Bearer ${OTHER_TOKEN}"},
		{"host": "pypi.org", "header": "X-Key", "value": "${EMPTY}"}]}}`), "p.json", e)
	if err != nil {
		t.Fatalf("a missing secret made the policy unusable: %v", err)
	}
	n := p.Network()
	if d, h := n.CheckName("api.github.com", 443), n.Inject("api.github.com", 443); !d.Allowed || len(h) != 1 || h[0].Value.Reveal() != "Bearer "+secretToken {
		t.Errorf("the rule whose secret is set: %+v, %v", d, n.Inject("api.github.com", 443))
	}
	for host, why := range map[string]string{"api.other.test": "OTHER_TOKEN is not set", "pypi.org": "EMPTY is empty"} {
		d := n.CheckName(host, 443)
		if d.Allowed || !strings.Contains(d.Reason, "is disabled: the environment variable "+why) || strings.Contains(d.Reason, secretToken) {
			t.Errorf("%s, whose rule is disabled: %+v", host, d)
		}
		if n.HasInject(host, 443) || len(n.Masks(host, 443)) != 0 {
			t.Errorf("%s: a disabled rule injects", host)
		}
	}
	if d := n.CheckName("api.other.test", 80); !d.Allowed {
		t.Errorf("port 80, which the disabled rule (443 only) does not cover: %+v", d)
	}
	sum := n.Summary()
	if !strings.Contains(sum, `inject[1] (api.other.test Authorization): the environment variable OTHER_TOKEN is not set`) ||
		!strings.Contains(sum, "inject[2] (pypi.org X-Key): the environment variable EMPTY is empty") || strings.Contains(n.String(), secretToken) {
		t.Errorf("summary %q, string %q", sum, n.String())
	}
	if _, err := parseWith([]byte(`{"network": {"inject": [{"host": "a.test", "header": "A", "value": "${CRLF}"}]}}`), "p.json",
		env("CRLF", "x\r\ny")); err == nil {
		t.Error("a value with CR and LF must stay an error of the policy")
	}
}

func TestNetworkInjectErrors(t *testing.T) {
	e := env("GITHUB_TOKEN", secretToken, "CRLF", "x\r\nEvil: "+secretToken, "LF", secretToken+"\n", "NUL", secretToken+"\x00", "EMPTY", "")
	for _, tt := range []struct{ rule, wantErr string }{
		{`{"host": "api.github.com", "header": "Authorization", "value": "${CRLF}"}`, "CRLF holds a control character"},
		{`{"host": "api.github.com", "header": "Authorization", "value": "${LF}"}`, "LF holds a control character"},
		{`{"host": "api.github.com", "header": "Authorization", "value": "${NUL}"}`, "NUL holds a control character"},
		{`{"host": "api.github.com", "header": "Authorization", "value": "a\r\nb ${GITHUB_TOKEN}"}`, "value holds a control character"},
		{`{"host": "api.github.com", "header": "Authorization", "value": "${GITHUB_TOKEN"}`, "not closed"},
		{`{"host": "api.github.com", "header": "Authorization", "value": "${1X}"}`, "does not name an environment variable"},
		{`{"host": "api.github.com", "header": "Authorization", "value": ""}`, "value is empty"},
		{`{"host": "api.github.com", "header": "Authorization"}`, "value is missing"},
		{`{"host": "api.github.com", "header": "Authorization", "value": 5}`, "want a string"},
		{`{"header": "Authorization", "value": "x"}`, "host is missing"},
		{`{"host": "*", "header": "Authorization", "value": "x"}`, "a lone *"},
		{`{"host": "https://api.github.com", "header": "Authorization", "value": "x"}`, "scheme"},
		{`{"host": "api.github.com", "value": "x"}`, "header is missing"},
		{`{"host": "api.github.com", "header": "Bad Header", "value": "x"}`, "not a valid header field name"},
		{`{"host": "api.github.com", "header": "X:Y", "value": "x"}`, "not a valid header field name"},
		{`{"host": "api.github.com", "header": "Host", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "content-length", "value": "1"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Transfer-Encoding", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Connection", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Upgrade", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Proxy-Authorization", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "TE", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Trailer", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Keep-Alive", "value": "x"}`, "hop-by-hop"},
		{`{"host": "api.github.com", "header": "Authorization", "value": "x", "secret": 1}`, `unknown field "secret"`},
	} {
		_, err := parseWith([]byte(`{"network": {"inject": [`+tt.rule+`]}}`), "p.json", e)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("inject %s: %v, want %q", tt.rule, err, tt.wantErr)
			continue
		}
		if strings.Contains(err.Error(), secretToken) || strings.Contains(err.Error(), "Evil") {
			t.Errorf("inject %s: the error shows the secret: %v", tt.rule, err)
		}
	}
}

func TestNetworkRedaction(t *testing.T) {
	for _, data := range []string{
		`{"network": {"allow": ["api.github.com"], "inject": [{"host": "api.github.com", "header": "Authorization", "value": "Bearer ${GITHUB_TOKEN}"}]}}`,
		// A secret written literally in the file is hidden as well.
		`{"network": {"allow": ["api.github.com"], "inject": [{"host": "api.github.com", "header": "Authorization", "value": "Bearer ` + secretToken + `"}]}}`,
	} {
		p, err := parseWith([]byte(data), "p.json", env("GITHUB_TOKEN", secretToken))
		if err != nil {
			t.Fatal(err)
		}
		n := p.Network()
		hs := n.Inject("api.github.com", 443)
		if len(hs) != 1 || hs[0].Value.Reveal() != "Bearer "+secretToken {
			t.Fatalf("inject: %+v", hs)
		}
		var printed []string
		for _, v := range []any{p, *p, n, *n, hs, hs[0], hs[0].Value, &hs[0].Value, n.inject[0], p.NetworkSection, *p.NetworkSection, p.NetworkSection.Inject} {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%T %d"} {
				printed = append(printed, fmt.Sprintf(verb, v))
			}
			if b, err := json.Marshal(v); err == nil {
				printed = append(printed, string(b))
			}
			printed = append(printed, fmt.Sprint(v), fmt.Sprintln(v))
		}
		var buf strings.Builder
		slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "policy", p, "network", n, "header", hs[0], "value", hs[0].Value)
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "value", hs[0].Value, "headers", hs)
		printed = append(printed, buf.String(), n.String(), n.GoString(), hs[0].Value.String(), hs[0].Value.GoString())
		for _, s := range printed {
			if strings.Contains(s, secretToken) || strings.Contains(s, fmt.Sprintf("%x", secretToken)) || strings.Contains(s, fmt.Sprintf("%X", secretToken)) {
				t.Fatalf("the secret is printed: %s", s)
			}
		}
		for _, s := range []string{fmt.Sprintf("%v", hs[0].Value), fmt.Sprintf("%#v", hs[0].Value), hs[0].Value.String()} {
			if s != "[redacted]" {
				t.Errorf("secret printed as %q", s)
			}
		}
		if b, _ := json.Marshal(hs[0].Value); string(b) != `"[redacted]"` {
			t.Errorf("secret marshaled as %s", b)
		}
	}
}

func TestNetworkDefaultsAndBounds(t *testing.T) {
	n := mustNetwork(t, `{}`, env())
	if n.MaxConnections() != 16 || n.MaxBytesPerCall() != 256<<20 || n.ConnectTimeout() != 10*time.Second || n.IdleTimeout() != 60*time.Second {
		t.Errorf("defaults: %v", n)
	}
	if d := n.CheckName("api.github.com", 443); d.Allowed || d.Reason != "api.github.com:443 is not allowed by the network policy" {
		t.Errorf("an empty section: %+v", d)
	}
	n = mustNetwork(t, `{"max_connections": 4096, "max_bytes_per_call": 1099511627776, "connect_timeout": 0.5, "idle_timeout": 3600}`, env())
	if n.MaxConnections() != 4096 || n.MaxBytesPerCall() != 1<<40 || n.ConnectTimeout() != 500*time.Millisecond || n.IdleTimeout() != time.Hour {
		t.Errorf("set: %v", n)
	}
	for _, tt := range []struct{ section, wantErr string }{
		{`{"max_connections": 0}`, "network.max_connections is 0; want 1 to 4096"},
		{`{"max_connections": 4097}`, "max_connections is 4097"},
		{`{"max_connections": -1}`, "max_connections is -1"},
		{`{"max_connections": 1.5}`, "cannot unmarshal number 1.5"},
		{`{"max_connections": "16"}`, "cannot unmarshal string"},
		{`{"max_bytes_per_call": 0}`, "max_bytes_per_call is 0"},
		{`{"max_bytes_per_call": 1099511627777}`, "max_bytes_per_call is 1099511627777"},
		{`{"connect_timeout": 0}`, "connect_timeout is 0"},
		{`{"connect_timeout": -1}`, "connect_timeout is -1"},
		{`{"idle_timeout": 3601}`, "idle_timeout is 3601"},
		{`{"idle_timeout": "60s"}`, "cannot unmarshal string"},
		{`{"alow": []}`, `unknown field "alow"`},
		{`{"allow": ["ok.test", "bad host"]}`, `network.allow[1] "bad host": it holds a space`},
		{`{"deny": ["*"]}`, `network.deny[0] "*": a lone *`},
		{`{"allow": "api.github.com"}`, "cannot unmarshal string"},
		{`null`, ""},
		{`[]`, "cannot unmarshal array"},
	} {
		_, err := parseWith([]byte(`{"network": `+tt.section+`}`), "p.json", env())
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("network %s: %v, want %q", tt.section, err, tt.wantErr)
		}
	}
}

func TestNetworkAbsent(t *testing.T) {
	p, err := parseWith([]byte(`{"max_tool_calls": 3}`), "/etc/bridge/policy.json", env())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Network{p.Network(), (*Policy)(nil).Network(), (&Policy{}).Network(), (&Policy{NetworkSection: &NetworkSection{}}).Network()} {
		if n == nil {
			t.Fatal("Network() is nil")
		}
		d := n.CheckName("api.github.com", 443)
		if d.Allowed || !strings.Contains(d.Reason, "no connection is allowed") {
			t.Errorf("no section: %+v", d)
		}
		if d := n.CheckAddr("", 443, netip.MustParseAddr("8.8.8.8")); d.Allowed {
			t.Errorf("no section, an address: %+v", d)
		}
		if n.MaxConnections() != 16 || n.ConnectTimeout() != 10*time.Second || n.HasInject("api.github.com", 443) {
			t.Errorf("no section: %v", n)
		}
	}
	if d := p.Network().CheckName("x.test", 443); !strings.Contains(d.Reason, "there is no network section in the policy (in policy.json)") || strings.Contains(d.Reason, "/etc/bridge") {
		t.Errorf("reason: %q", d.Reason)
	}
	if d := (*Policy)(nil).Network().CheckName("x.test", 443); !strings.Contains(d.Reason, "there is no network section in the policy") {
		t.Errorf("reason: %q", d.Reason)
	}
}

// The network section through parse, JSON and TOML, with the place of
// an error in the file.
func TestParseNetworkSection(t *testing.T) {
	full := map[string]string{
		"policy.json": `{"network": {
   "allow": ["api.github.com", "*.example.org:8443", "10.1.2.0/24:443", "127.0.0.1:8080", "[2001:db8::1]:443"],
   "deny": ["internal.example.org"],
   "inject": [{"host": "api.github.com", "header": "Authorization", "value": "Bearer ${GITHUB_TOKEN}"}],
   "max_connections": 16,
   "max_bytes_per_call": 268435456,
   "connect_timeout": 10,
   "idle_timeout": 60
}}`,
		"policy.toml": `max_tool_calls = 5

[network]
allow = ["api.github.com", "*.example.org:8443", "10.1.2.0/24:443", "127.0.0.1:8080", "[2001:db8::1]:443"]
deny = ['internal.example.org']
max_connections = 16
max_bytes_per_call = 268435456
connect_timeout = 10
idle_timeout = 60.0

[[network.inject]]
host = "api.github.com"
header = "Authorization"
value = "Bearer ${GITHUB_TOKEN}"
`,
	}
	for name, data := range full {
		p, err := parseWith([]byte(data), name, env("GITHUB_TOKEN", secretToken))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := p.Network()
		for _, c := range []struct {
			host  string
			port  int
			allow bool
		}{
			{"api.github.com", 443, true}, {"a.example.org", 8443, true}, {"internal.example.org", 8443, false},
			{"10.1.2.7", 443, true}, {"127.0.0.1", 8080, true}, {"2001:db8::1", 443, true}, {"example.org", 8443, false},
		} {
			if d := n.CheckName(c.host, c.port); d.Allowed != c.allow {
				t.Errorf("%s: CheckName(%s, %d) = %+v", name, c.host, c.port, d)
			}
		}
		if hs := n.Inject("api.github.com", 443); len(hs) != 1 || hs[0].Value.Reveal() != "Bearer "+secretToken {
			t.Errorf("%s: inject %v", name, hs)
		}
		if n.MaxConnections() != 16 || n.MaxBytesPerCall() != 256<<20 || n.ConnectTimeout() != 10*time.Second || n.IdleTimeout() != time.Minute {
			t.Errorf("%s: %v", name, n)
		}
	}
	for _, tt := range []struct{ name, data, wantErr string }{
		{"policy.json", "{\n  \"network\": {\n    \"allow\": [\"ok.test\",\n      \"https://x.test\"]}}", `line 4, column 7: network.allow[1] "https://x.test": it has a scheme`},
		{"policy.json", "{\"servers\": {}, \"network\": {\n  \"deny\": [\"127.1\"]}}", `line 2, column 12: network.deny[0] "127.1": it is a numeric spelling`},
		{"policy.json", "{\"network\": {\n  \"max_connections\": 0}}", "line 2, column 3: network.max_connections is 0"},
		{"policy.json", "{\"network\": {\n  \"allow\": [],\n  \"bogus\": 1}}", `line 3, column 3: json: unknown field "bogus"`},
		{"policy.json", "{\"network\": {\n  \"max_connections\": \"x\"}}", "line 2, column"},
		{"policy.json", "{\"network\": {\"inject\": [\n {\"host\": \"a.test\", \"header\": \"Authorization\", \"value\": \"${NOPE\"}]}}", `line 2, column 11: network.inject[0] (host "a.test"): value: a ${ is not closed by }`},
		{"policy.json", "{\"network\": {\"inject\": [\n {\"host\": \"a.test\",\n \"header\": \"Host\", \"value\": \"x\"}]}}", `line 3, column 12: network.inject[0] (host "a.test"): header "Host" is a hop-by-hop`},
		{"policy.toml", "[network]\nallow = [\n  \"ok.test\",\n  \"*\",\n]\n", `line 4, column 3: network.allow[1] "*": a lone *`},
		{"policy.toml", "[network]\ndeny = ['0x7f.1']\n", `line 2, column 9: network.deny[0] "0x7f.1"`},
		{"policy.toml", "[network]\nallow = []\nmax_connections = 0\n", "line 3, column 1: network.max_connections is 0"},
		{"policy.toml", "[network]\nallow = []\nbogus = 1\n", `line 3, column 1: json: unknown field "bogus"`},
		{"policy.toml", "[network]\n\n[[network.inject]]\nhost = \"a.test\"\nheader = \"Authorization\"\nvalue = \"${NOPE\"\n", `line 4, column 8: network.inject[0] (host "a.test"): value: a ${ is not closed by }`},
		{"policy.toml", "[network]\nidle_timeout = 0.0\n", "line 2, column 1: network.idle_timeout is 0"},
	} {
		_, err := parseWith([]byte(tt.data), tt.name, env())
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parse(%s, %q): %v, want %q", tt.name, tt.data, err, tt.wantErr)
		}
	}
}
