package mcpbridge

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
)

func TestShortSessionID(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"", ""},
		{"ABCDEF", "ABCDEF"},
		{"MIY3A2ZBHWPHS7FCT2DEZMBWDX", "MIY3A2…"},
		{"replica-a.MIY3A2ZBHWPHS7FCT2DEZMBWDX", "replica-a.MIY3A2…"},
		{"r.ABC", "r.ABC"},
	} {
		if got := shortSessionID(c.id); got != c.want {
			t.Errorf("shortSessionID(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}

// TestConsoleSnapshotOneEngine: with one engine (no MCP_BRIDGE_ENGINES)
// the console's engine table has that engine's row, and each session
// names it.
func TestConsoleSnapshotOneEngine(t *testing.T) {
	cs, _, srv, _ := consoleBridge(t, `{}`, nil)
	if res, text, _ := call(t, cs, map[string]any{"code": "print(1)"}); res.IsError || text != "1" {
		t.Fatalf("call: %q", text)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/state", nil)
	req.Header.Set("Authorization", "Bearer "+testConsoleToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap console.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatalf("decoding the state (%d): %v", resp.StatusCode, err)
	}
	if len(snap.Engines) != 1 || snap.Engines[0].Name != snap.Engine || snap.Engine == "" || !snap.Engines[0].Up || snap.Engines[0].Sandboxes != 1 {
		t.Errorf("engines %+v (engine %q)", snap.Engines, snap.Engine)
	}
	if len(snap.Sessions) != 1 || snap.Sessions[0].Engine != snap.Engine {
		t.Errorf("sessions %+v", snap.Sessions)
	}
}
