package policy

import (
	"strings"
	"testing"
)

// TestConfirmVia: confirm_via at the policy and per server, validated
// when the policy loads.
func TestConfirmVia(t *testing.T) {
	for _, tt := range []struct{ data, wantErr string }{
		{`{"confirm_via": ["client", "console"]}`, ""},
		{`{"servers": {"gh": {"confirm": ["*"], "confirm_via": ["console"]}}}`, ""},
		{`{"confirm_via": []}`, "confirm_via is empty"},
		{`{"confirm_via": ["slack"]}`, `confirm_via has "slack"`},
		{`{"servers": {"gh": {"confirm_via": ["console", "console"]}}}`, `servers["gh"].confirm_via names "console" twice`},
	} {
		_, err := parse([]byte(tt.data), "policy.json")
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("parse(%s): %v, want %q", tt.data, err, tt.wantErr)
		}
	}
	p, err := parse([]byte(`{"confirm_via": ["client", "console"], "servers": {"gh": {"confirm_via": ["console"]}, "fs": {}}}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p               *Policy
		server          string
		client, console bool
	}{
		{nil, "gh", true, false},
		{&Policy{}, "gh", true, false},
		{p, "gh", false, true},
		{p, "fs", true, true},
		{p, "other", true, true},
	} {
		if c, k := tt.p.ConfirmBy(tt.server); c != tt.client || k != tt.console {
			t.Errorf("ConfirmBy(%s) = %v, %v; want %v, %v", tt.server, c, k, tt.client, tt.console)
		}
	}
}
