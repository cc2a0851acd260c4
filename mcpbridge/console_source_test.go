package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// TestConsoleSnapshotOneEngine: with one engine (no MCP_BRIDGE_ENGINES)
// the console's engine table has that engine's row, and each session
// names it.
func TestConsoleSnapshotOneEngine(t *testing.T) {
	t.Parallel()
	cs, _, srv, _ := consoleBridge(t, `{}`, nil)
	if res, text, _ := call(t, cs, map[string]any{"code": "print(1)"}); res.IsError || text != "1" {
		t.Fatalf("call: %q", text)
	}
	snap := consoleState(t, srv)
	if len(snap.Engines) != 1 || snap.Engines[0].Name != snap.Engine || snap.Engine == "" || !snap.Engines[0].Up || snap.Engines[0].Sandboxes != 1 {
		t.Errorf("engines %+v (engine %q)", snap.Engines, snap.Engine)
	}
	if len(snap.Sessions) != 1 || snap.Sessions[0].Engine != snap.Engine {
		t.Errorf("sessions %+v", snap.Sessions)
	}
}

// consoleState returns the console's state as GET /console/state (with
// the bearer token) answers it.
func consoleState(t *testing.T, srv *httptest.Server) console.Snapshot {
	t.Helper()
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
	return snap
}

// TestConsoleListsHandles: a sandbox behind a handle (protocol
// 2026-07-28) is listed with the MCP sessions, named by its handle,
// redacted.
func TestConsoleListsHandles(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{ConsoleToken: testConsoleToken}, false)
	cs := hb.connectStateless(t, "")
	_, _, sc := call(t, cs, map[string]any{"code": "x = 1"})
	h, _ := sc["session"].(string)
	snap := consoleState(t, hb.srv)
	if len(snap.Sessions) != 1 || snap.Sessions[0].MCPSession != "handle "+handle.Redact(h) || strings.Contains(snap.Sessions[0].MCPSession, h[:len(h)-6]) {
		t.Fatalf("sessions %+v, want the handle's sandbox named by its redacted handle", snap.Sessions)
	}
}

// memoryEngine is the local engine with memory figures: every sandbox
// uses 42 MiB, and the reads are counted.
type memoryEngine struct {
	enginetest.Local
	reads atomic.Int64
}

func (m *memoryEngine) SandboxMemory(_ context.Context, engineName, ref string) (int64, error) {
	m.reads.Add(1)
	if engineName != "" || ref == "" {
		return 0, fmt.Errorf("reading %q on %q: %w", ref, engineName, engine.ErrNoSandbox)
	}
	return 42 << 20, nil
}

// TestConsoleMemory: an engine that reads a sandbox's memory gets its
// figure onto the console, read in the background, not once per snapshot.
func TestConsoleMemory(t *testing.T) {
	eng := &memoryEngine{Local: enginetest.Local{T: t}}
	f := newFixture(t, fixtureOptions{Engine: eng, Options: Options{Registry: stubRegistry(t)}, HTTP: &HTTPOptions{ConsoleToken: testConsoleToken}})
	cs := f.connectInMemory(t)
	if res, text, _ := call(t, cs, map[string]any{"code": "print(1)"}); res.IsError || text != "1" {
		t.Fatalf("call: %q", text)
	}
	waitFor(t, "the memory figure", func() bool {
		snap := consoleState(t, f.srv)
		return len(snap.Sessions) == 1 && snap.Sessions[0].Memory == 42<<20
	})
	for range 20 {
		consoleState(t, f.srv)
	}
	if n := eng.reads.Load(); n > 3 {
		t.Errorf("%d memory reads for about 25 snapshots in well under 5s; want one pass per 5s", n)
	}
}
