package policy

import (
	"net/netip"
	"strings"
	"testing"
)

// TestInstallNetwork: installs reach the index hosts, whatever addresses
// their names resolve to, and what the policy allows, as it allows it,
// with the policy's inject rules; a broken section refuses them too.
func TestInstallNetwork(t *testing.T) {
	p, err := parseWith([]byte(`{"network": {"allow": ["api.example.org"], "max_bytes_per_call": 1048576,
		"inject": [{"host": "mirror.internal:443", "header": "Authorization", "value": "Bearer ${TOKEN}"}]}}`), "p.json", env("TOKEN", secretToken))
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.InstallNetwork([]string{"mirror.internal:443", "127.0.0.1:8080"})
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
		{"mirror.internal", 80, "10.1.2.3", false},
		{"127.0.0.1", 8081, "127.0.0.1", false},
		{"api.example.org", 443, "93.184.216.34", true}, // the policy's own allow entries apply too
		{"api.example.org", 443, "10.9.9.9", false},     // as the policy has them: not to a private address
		{"169.254.169.254", 80, "169.254.169.254", false},
		{"other.example.org", 443, "93.184.216.34", false},
	} {
		if d := n.CheckAddr(tt.host, tt.port, netip.MustParseAddr(tt.addr)); d.Allowed != tt.ok {
			t.Errorf("CheckAddr(%s:%d, %s) = %+v, want allowed %v", tt.host, tt.port, tt.addr, d, tt.ok)
		}
	}
	if h := n.Inject("mirror.internal", 443); len(h) != 1 || h[0].Value.Reveal() != "Bearer "+secretToken {
		t.Errorf("the inject rule: %v", h)
	}
	if n.MaxBytesPerCall() < 4<<30 {
		t.Errorf("an install may move %d bytes", n.MaxBytesPerCall())
	}
	// No network section: installs reach their hosts all the same.
	none, _ := parseWith([]byte(`{"tools": {}}`), "p.json", env())
	if n, err := none.InstallNetwork([]string{"127.0.0.1:8080"}); err != nil || !n.CheckAddr("127.0.0.1", 8080, netip.MustParseAddr("127.0.0.1")).Allowed {
		t.Errorf("without a network section: %v %v", n, err)
	}
	var nilPolicy *Policy
	if n, err := nilPolicy.InstallNetwork([]string{"pypi.org:443"}); err != nil || !n.CheckName("pypi.org", 443).Allowed {
		t.Errorf("without a policy: %v %v", n, err)
	}
	// A broken section refuses installs too.
	broken := &Policy{NetworkSection: &NetworkSection{}}
	if n, _ := broken.InstallNetwork([]string{"127.0.0.1:8080"}); n.CheckAddr("127.0.0.1", 8080, netip.MustParseAddr("127.0.0.1")).Allowed {
		t.Error("a broken network section let an install through")
	}
	if _, err := p.InstallNetwork([]string{"http://x/"}); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("a bad host: %v", err)
	}
}
