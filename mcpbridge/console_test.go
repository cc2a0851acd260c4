package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

const (
	testConsoleToken = "console-token-0123456789abcdef0123456789"
	testClientToken  = "clients-token-0123456789abcdef"
)

// consoleGet sends GET path to hb with headers and returns the response
// and its body.
func consoleGet(t *testing.T, hb *fixture, path string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, hb.srv.URL+path, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	hc := *hb.srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// TestConsoleOff: without a console token /console is 404, and a console
// token equal to the clients' is refused at start.
func TestConsoleOff(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{Token: testClientToken}, false)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer " + testClientToken}} {
		if resp, _ := consoleGet(t, hb, console.Path, h); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s with %v: %d, want 404", console.Path, h, resp.StatusCode)
		}
	}
	err := CheckListen("127.0.0.1:0", &HTTPOptions{Token: testConsoleToken, ConsoleToken: testConsoleToken})
	if !errors.Is(err, console.ErrSameToken) {
		t.Errorf("CheckListen with the same tokens: %v, want ErrSameToken", err)
	}
}

// TestConsoleShowsCalls: the console of a bridge serving a client shows
// its session and a call's hostile output as it comes, as text in the
// page and as JSON strings in the events; the clients' token and a
// foreign Host do not open it.
func TestConsoleShowsCalls(t *testing.T) {
	t.Parallel()
	hb := newFixture(t, fixtureOptions{Engine: newTrackingEngine(t), Audit: true, HTTP: &HTTPOptions{Token: testClientToken, ConsoleToken: testConsoleToken}})
	bearer := map[string]string{"Authorization": "Bearer " + testConsoleToken}
	if resp, _ := consoleGet(t, hb, console.Path, map[string]string{"Authorization": "Bearer " + testClientToken}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the clients' token: %d, want 401", resp.StatusCode)
	}
	if resp, _ := consoleGet(t, hb, console.Path, map[string]string{"Authorization": "Bearer " + testConsoleToken, "Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d, want 403", resp.StatusCode)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hb.srv.URL+"/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+testConsoleToken)
	resp, err := hb.srv.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	waitData := func(want string) string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data: ") && strings.Contains(l, want) {
				return l
			}
		}
		t.Fatalf("the stream ended without %q", want)
		return ""
	}
	waitData(`"sessions":[]`)

	cs, err := hb.connect(t, testClientToken)
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(t.TempDir(), "release")
	code := "import os, time\nprint('<script>alert(1)</script><b>bold</b>', flush=True)\n" +
		"while not os.path.exists(" + pyQuote(release) + "):\n    time.sleep(0.01)\nprint('done')"
	done := make(chan string, 1)
	go func() { text, _ := callText(t, cs, code); done <- text }()
	data := waitData(`\u003cscript\u003ealert(1)\u003c/script\u003e\u003cb\u003ebold`)
	if strings.Contains(data, "<script>") || !strings.Contains(data, `"name":"session-`) || !strings.Contains(data, `"busy":true`) {
		t.Errorf("the event: %s", data)
	}
	_, page := consoleGet(t, hb, console.Path, bearer)
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;bold") {
		t.Errorf("the page does not show the output as text: %s", page)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if text := <-done; !strings.HasSuffix(text, "done") {
		t.Fatalf("the call: %q", text)
	}
	waitData(`"calls":[]`)
	// Its audit record follows.
	waitData(`"event":"run_python","session":"session-`)
}

// pyQuote quotes s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

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
