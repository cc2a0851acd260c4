package mcpbridge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallQuota: each client has its own minute of calls; past the
// limit a call is refused naming the setting and when to try again; a
// call without a client is never counted.
func TestCallQuota(t *testing.T) {
	q := newCallQuota(2, 0)
	now := time.Unix(1_800_000_000, 0)
	q.now = func() time.Time { return now }
	extra := func(token string) *mcp.RequestExtra {
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		return &mcp.RequestExtra{Header: h}
	}
	for i := range 2 {
		if why := q.take(extra("alice")); why != "" {
			t.Fatalf("alice's call %d: %s", i+1, why)
		}
	}
	why := q.take(extra("alice"))
	if !strings.Contains(why, "MCP_BRIDGE_PERSON_CALLS_PER_MINUTE=2") || !strings.Contains(why, "try again in 1m0s") {
		t.Errorf("alice's third call: %q", why)
	}
	if why := q.take(extra("bob")); why != "" {
		t.Errorf("bob's first call: %s", why)
	}
	for range 5 {
		if why := q.take(extra("")); why != "" || q.take(nil) != "" {
			t.Errorf("a call without a client: %s", why)
		}
	}
	now = now.Add(time.Minute)
	if why := q.take(extra("alice")); why != "" {
		t.Errorf("alice, a minute later: %s", why)
	}
	var none *callQuota
	if none.take(extra("x")) != "" || newCallQuota(0, 0).take(extra("x")) != "" || none.sandboxes(100) != "" {
		t.Error("no limit refused a call")
	}
	sq := newCallQuota(0, 3)
	if sq.sandboxes(2) != "" || !strings.Contains(sq.sandboxes(3), "you hold 3 sandboxes") || !strings.Contains(sq.sandboxes(3), "MCP_BRIDGE_PERSON_MAX_SANDBOXES=3") {
		t.Errorf("the sandboxes' limit: %q", sq.sandboxes(3))
	}
}
