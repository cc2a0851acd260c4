package policy

import (
	"net/netip"
	"strings"
	"testing"
)

// TestInstallNetwork: installs reach the index and file hosts, whatever
// addresses their names resolve to, and nothing the policy's allow
// entries name; its deny entries still hold; the inject rules add to the
// index hosts only; a broken section refuses them too.
func TestInstallNetwork(t *testing.T) {
	p, err := parseWith([]byte(`{"network": {"allow": ["api.example.org", "mirror.internal:443"], "deny": ["files.bad.example"], "max_bytes_per_call": 1048576,
		"inject": [{"host": "mirror.internal:443", "header": "Authorization", "value": "Bearer ${TOKEN}"},
		           {"host": "api.example.org", "header": "Authorization", "value": "Bearer ${TOKEN}"},
		           {"host": "files.example.org", "header": "Authorization", "value": "Bearer ${TOKEN}"}]}}`), "p.json", env("TOKEN", secretToken))
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.InstallNetwork(InstallHosts{Index: []string{"mirror.internal:443", "127.0.0.1:8080"}, Files: []string{"files.example.org:443", "files.bad.example:443"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host string
		port int
		addr string
		ok   bool
	}{
		{"mirror.internal", 443, "10.1.2.3", true}, // a private address the operator's index resolves to
		{"127.0.0.1", 8080, "127.0.0.1", true},
		{"files.example.org", 443, "93.184.216.34", true},
		{"files.bad.example", 443, "93.184.216.34", false}, // denied by the policy
		{"mirror.internal", 80, "10.1.2.3", false},
		{"127.0.0.1", 8081, "127.0.0.1", false},
		{"api.example.org", 443, "93.184.216.34", false}, // the policy's allow entries do not widen installs
		{"169.254.169.254", 80, "169.254.169.254", false},
		{"other.example.org", 443, "93.184.216.34", false},
	} {
		if d := n.CheckAddr(tt.host, tt.port, netip.MustParseAddr(tt.addr)); d.Allowed != tt.ok {
			t.Errorf("CheckAddr(%s:%d, %s) = %+v, want allowed %v", tt.host, tt.port, tt.addr, d, tt.ok)
		}
	}
	if h := n.Inject("mirror.internal", 443); len(h) != 1 || h[0].Value.Reveal() != "Bearer "+secretToken {
		t.Errorf("the index's inject rule: %v", h)
	}
	// A file host with an inject rule of the policy gets no secret from an
	// install: only index hosts do.
	if h := n.Inject("files.example.org", 443); len(h) != 0 {
		t.Errorf("a file host's inject rule applied to an install: %v", h)
	}
	if n.MaxBytesPerCall() < 4<<30 {
		t.Errorf("an install may move %d bytes", n.MaxBytesPerCall())
	}
	// No network section: installs reach their hosts all the same.
	none, _ := parseWith([]byte(`{"tools": {}}`), "p.json", env())
	if n, err := none.InstallNetwork(InstallHosts{Index: []string{"127.0.0.1:8080"}}); err != nil || !n.CheckAddr("127.0.0.1", 8080, netip.MustParseAddr("127.0.0.1")).Allowed {
		t.Errorf("without a network section: %v %v", n, err)
	}
	var nilPolicy *Policy
	if n, err := nilPolicy.InstallNetwork(InstallHosts{Index: []string{"pypi.org:443"}, Files: []string{"files.pythonhosted.org:443"}}); err != nil ||
		!n.CheckName("pypi.org", 443).Allowed || !n.CheckName("files.pythonhosted.org", 443).Allowed {
		t.Errorf("without a policy: %v %v", n, err)
	}
	// A broken section refuses installs too.
	broken := &Policy{NetworkSection: &NetworkSection{}}
	if n, _ := broken.InstallNetwork(InstallHosts{Index: []string{"127.0.0.1:8080"}}); n.CheckAddr("127.0.0.1", 8080, netip.MustParseAddr("127.0.0.1")).Allowed {
		t.Error("a broken network section let an install through")
	}
	if _, err := p.InstallNetwork(InstallHosts{Index: []string{"http://x/"}}); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("a bad index host: %v", err)
	}
	if _, err := p.InstallNetwork(InstallHosts{Files: []string{"http://x/"}}); err == nil || !strings.Contains(err.Error(), "files") {
		t.Errorf("a bad file host: %v", err)
	}
}

// TestCheckMethod: to a host with an inject rule TRACE and TRACK are
// refused; an install sends only GET and HEAD to an index with one, and
// any method to a host without.
func TestCheckMethod(t *testing.T) {
	p, err := parseWith([]byte(`{"network": {"allow": ["api.example.org", "plain.example.org"],
		"inject": [{"host": "api.example.org", "header": "Authorization", "value": "Bearer ${TOKEN}"},
		           {"host": "mirror.internal:443", "header": "Authorization", "value": "Bearer ${TOKEN}"}]}}`), "p.json", env("TOKEN", secretToken))
	if err != nil {
		t.Fatal(err)
	}
	own := p.Network()
	install, err := p.InstallNetwork(InstallHosts{Index: []string{"mirror.internal:443", "open.internal:443"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		n      *Network
		host   string
		method string
		why    string // "": allowed
	}{
		{own, "api.example.org", "GET", ""},
		{own, "api.example.org", "POST", ""}, // an API's secret goes with any method but the echoing ones
		{own, "api.example.org", "TRACE", "TRACE is refused to a host the gateway adds a secret to"},
		{own, "api.example.org", "track", "track is refused"},
		{own, "plain.example.org", "TRACE", ""}, // no secret to echo
		{install, "mirror.internal", "GET", ""},
		{install, "mirror.internal", "HEAD", ""},
		{install, "mirror.internal", "POST", "mirror.internal:443: POST is refused: package installs send the index's credentials with GET and HEAD only"},
		{install, "mirror.internal", "PUT", "PUT is refused"},
		{install, "mirror.internal", "get", "get is refused"},
		{install, "mirror.internal", "TRACE", "TRACE is refused"},
		{install, "open.internal", "POST", ""}, // an index without an inject rule has no secret to lend
	} {
		d := tt.n.CheckMethod(tt.host, 443, tt.method)
		if d.Allowed != (tt.why == "") || !strings.Contains(d.Reason, tt.why) {
			t.Errorf("CheckMethod(%s, %s) = %+v, want %q", tt.host, tt.method, d, tt.why)
		}
	}
}

// TestMasks: what a host's answers must not show is each ${NAME}
// expansion of its inject values, and each whole value of 8 bytes or
// more; a short value written in the file is not masked, and another
// host's values are not its.
func TestMasks(t *testing.T) {
	p, err := parseWith([]byte(`{"network": {"allow": ["api.example.org"],
		"inject": [{"host": "api.example.org", "header": "Authorization", "value": "Bearer ${TOKEN}"},
		           {"host": "api.example.org", "header": "X-Api-Version", "value": "v3"},
		           {"host": "api.example.org", "header": "X-Key", "value": "literal-key-in-file"},
		           {"host": "api.example.org", "header": "X-Pin", "value": "${PIN}"},
		           {"host": "other.example.org", "header": "X-Other", "value": "${OTHER}"}]}}`), "p.json",
		env("TOKEN", secretToken, "PIN", "4711", "OTHER", "other-secret-value"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Network().Masks("api.example.org", 443) {
		got = append(got, s.Reveal())
	}
	want := []string{"Bearer " + secretToken, secretToken, "literal-key-in-file", "4711"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("masks %q, want %q", got, want)
	}
	if m := p.Network().Masks("plain.example.org", 443); len(m) != 0 {
		t.Errorf("a host without a rule has masks: %d", len(m))
	}
}
