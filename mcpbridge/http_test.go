package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPSessionsAreIsolated runs two clients over HTTP and HTTPS: each
// session has its own sandbox and state.
func TestHTTPSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			hb := serveBridge(t, Options{}, HTTPOptions{}, tls)
			a, b := hb.mustConnect(t), hb.mustConnect(t)
			if text, isErr := callText(t, a, "x = 1\nprint('set')"); isErr || text != "set" {
				t.Fatalf("A sets x: %q", text)
			}
			if text, isErr := callText(t, b, "print(x)"); !isErr || !strings.Contains(text, "NameError") {
				t.Fatalf("B reads x: %q, want a NameError", text)
			}
			if text, isErr := callText(t, a, "print(x)"); isErr || text != "1" {
				t.Fatalf("A reads x: %q", text)
			}
			if started, live := hb.eng.counts(); started != 2 || live != 2 {
				t.Fatalf("%d sandboxes started, %d live; want one per session", started, live)
			}
		})
	}
}

// TestHTTPFirstCallFromPool serves a new session's first call in the
// sandbox the pool had started.
func TestHTTPFirstCallFromPool(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{PoolSize: 1}, HTTPOptions{}, false)
	p := hb.b.pool
	waitFor(t, "the pool to fill", func() bool { return p.readyCount() == 1 })
	p.mu.Lock()
	pooled := p.ready[0]
	p.mu.Unlock()
	cs := hb.mustConnect(t)
	if text, isErr := callText(t, cs, "print('warm')"); isErr || text != "warm" {
		t.Fatalf("first call: %q", text)
	}
	if got := hb.onlySession(t); got != pooled {
		t.Fatalf("the first call ran in %s, not in the pooled %s", got.name, pooled.name)
	}
	waitFor(t, "the pool to refill", func() bool { return p.readyCount() == 1 })
}

func TestHTTPToken(t *testing.T) {
	t.Parallel()
	const token = "http-test-token-0123456789"
	hb := serveBridge(t, Options{}, HTTPOptions{Token: token}, false)
	realm := `Bearer realm="` + implementationName + `"`
	for _, tt := range []struct {
		name, auth, challenge, msg string
	}{
		{"missing", "", realm, "missing bearer token"},
		{"wrong", "Bearer not-the-token-0123456789", realm + `, error="invalid_token"`, "invalid bearer token"},
		{"other scheme", "Basic " + token, realm, "missing bearer token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			if tt.auth != "" {
				headers["Authorization"] = tt.auth
			}
			resp, body := hb.do(t, context.Background(), http.MethodPost, hb.url, strings.NewReader(initializeBody), headers)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != tt.challenge {
				t.Fatalf("%d, WWW-Authenticate %q; want 401, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tt.challenge)
			}
			if _, msg := rpcError(t, resp, body); !strings.Contains(msg, tt.msg) || strings.Contains(msg, token) {
				t.Fatalf("message %q, want ~%q and no token", msg, tt.msg)
			}
		})
	}
	if _, err := hb.connect(t, ""); err == nil {
		t.Fatal("a client without the token connected")
	}
	cs, err := hb.connect(t, token)
	if err != nil {
		t.Fatalf("a client with the token: %v", err)
	}
	if text, isErr := callText(t, cs, "print('in')"); isErr || text != "in" {
		t.Fatalf("call with the token: %q", text)
	}
	if n := hb.b.sessionCount(); n != 1 {
		t.Fatalf("%d sessions, want only the one with the token", n)
	}
}

// TestHTTPHostAndOrigin refuses foreign Hosts (DNS rebinding) and Origins
// on a loopback server, and serves loopback pages and listed hosts.
func TestHTTPHostAndOrigin(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{AllowedHosts: []string{"bridge.test"}}, false)
	for _, tt := range []struct {
		name    string
		headers map[string]string
		status  int
		msg     string
	}{
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, 403, `Origin "https://evil.example" is not allowed`},
		{"null origin", map[string]string{"Origin": "null"}, 403, `Origin "null" is not allowed`},
		{"foreign host", map[string]string{"Host": "evil.example"}, 403, "DNS rebinding"},
		{"loopback page", map[string]string{"Origin": "http://localhost:3000"}, 200, ""},
		{"listed host", map[string]string{"Host": "bridge.test"}, 200, ""},
		{"listed host, its page", map[string]string{"Host": "bridge.test:8080", "Origin": "http://bridge.test:8080"}, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := hb.do(t, context.Background(), http.MethodPost, hb.url, strings.NewReader(initializeBody), tt.headers)
			if resp.StatusCode != tt.status {
				t.Fatalf("%d %q, want %d", resp.StatusCode, body, tt.status)
			}
			if tt.status == 200 {
				if resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(body, `"serverInfo"`) {
					t.Fatalf("initialize answered %q", body)
				}
				return
			}
			if _, msg := rpcError(t, resp, body); !strings.Contains(msg, tt.msg) {
				t.Fatalf("message %q, want ~%q", msg, tt.msg)
			}
		})
	}
}

// TestHTTPMaxSessions refuses a session past the limit, serving the
// others, and opens one again once a session ended.
func TestHTTPMaxSessions(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{MaxSessions: 2}, false)
	a, b := hb.mustConnect(t), hb.mustConnect(t)
	callText(t, a, "who = 'a'")
	callText(t, b, "who = 'b'")
	resp, body := hb.do(t, context.Background(), http.MethodPost, hb.url, strings.NewReader(initializeBody), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third session: %d (Retry-After %q) %q; want 503", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if _, msg := rpcError(t, resp, body); !strings.Contains(msg, "maximum of 2 sessions (MCP_BRIDGE_MAX_SESSIONS)") {
		t.Fatalf("a third session: %q", msg)
	}
	if _, err := hb.connect(t, ""); err == nil {
		t.Fatal("a third client connected")
	}
	for want, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		if text, isErr := callText(t, cs, "print(who)"); isErr || text != want {
			t.Fatalf("session %s after the refusal: %q", want, text)
		}
	}
	if n := hb.b.sessionCount(); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	a.Close() // DELETE
	waitFor(t, "the first session to end", func() bool { return hb.b.sessionCount() == 1 })
	c, err := hb.connect(t, "")
	if err != nil {
		t.Fatalf("a new session after one ended: %v", err)
	}
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPSessionEnds ends a session with DELETE and by idling: its
// client session and sandbox go with it, and its client can no longer
// call.
func TestHTTPSessionEnds(t *testing.T) {
	for _, tt := range []struct {
		name string
		idle time.Duration
		end  func(t *testing.T, hb *fixture, cs *mcp.ClientSession)
	}{
		{"delete", 0, func(t *testing.T, hb *fixture, cs *mcp.ClientSession) {
			resp, body := hb.do(t, context.Background(), http.MethodDelete, hb.url, nil, map[string]string{"Mcp-Session-Id": cs.ID()})
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: %d %q", resp.StatusCode, body)
			}
		}},
		{"idle", 400 * time.Millisecond, func(*testing.T, *fixture, *mcp.ClientSession) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hb := serveBridge(t, Options{}, HTTPOptions{SessionIdleTimeout: tt.idle}, false)
			cs := hb.mustConnect(t)
			if text, isErr := callText(t, cs, "print('up')"); isErr || text != "up" {
				t.Fatalf("call: %q", text)
			}
			if _, live := hb.eng.counts(); live != 1 || hb.clientSessions() != 1 {
				t.Fatalf("%d sandboxes, %d client sessions; want 1 each", live, hb.clientSessions())
			}
			tt.end(t, hb, cs)
			hb.waitEnded(t, "the session and its sandbox to end")
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "pass"}}); err == nil {
				t.Fatal("a call in the ended session succeeded")
			}
		})
	}
}

// trickle is a request body that sends its first bytes and then nothing
// until stop is closed.
type trickle struct {
	sent bool
	stop <-chan struct{}
}

func (r *trickle) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		return copy(p, `{"jsonrpc":"2.0",`), nil
	}
	<-r.stop
	return 0, io.EOF
}

// TestHTTPBadRequests answers requests the bridge cannot serve with an
// HTTP error, and goes on serving.
func TestHTTPBadRequests(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	defer close(stop)
	hb := serveBridge(t, Options{}, HTTPOptions{MaxBodyBytes: 1024, BodyTimeout: 300 * time.Millisecond}, false)
	cs := hb.mustConnect(t)
	for _, tt := range []struct {
		name, method, path, session string
		body                        io.Reader
		status                      int
		rpcMsg                      string // the JSON-RPC error's message, when the bridge answers
	}{
		// The bridge answers what it refuses itself with a JSON-RPC error;
		// the go-sdk, malformed messages and unknown sessions in plain text.
		{"too large", "POST", HTTPPath, "", strings.NewReader(`{"pad":"` + strings.Repeat("x", 2000) + `"}`), 413, "the request body is over the limit of 1024 bytes"},
		{"too large in a session", "POST", HTTPPath, cs.ID(), strings.NewReader(strings.Repeat(" ", 1025)), 413, "over the limit"},
		{"too slow", "POST", HTTPPath, "", &trickle{stop: stop}, 408, "the request body did not arrive within 300ms"},
		{"garbage", "POST", HTTPPath, "", strings.NewReader("{not json"), 400, ""},
		{"garbage in a session", "POST", HTTPPath, cs.ID(), strings.NewReader("]]"), 400, ""},
		{"unknown session", "POST", HTTPPath, "no-such-session", strings.NewReader(initializeBody), 404, ""},
		{"delete unknown session", "DELETE", HTTPPath, "no-such-session", nil, 404, ""},
		{"unknown path", "POST", "/nope", "", strings.NewReader(initializeBody), 404, "not found: MCP is served at /mcp"},
		{"root", "GET", "/", "", nil, 404, "not found: MCP is served at /mcp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			if tt.session != "" {
				headers["Mcp-Session-Id"] = tt.session
			}
			resp, body := hb.do(t, context.Background(), tt.method, hb.srv.URL+tt.path, tt.body, headers)
			if resp.StatusCode != tt.status {
				t.Fatalf("%d %q, want %d", resp.StatusCode, body, tt.status)
			}
			if tt.rpcMsg != "" {
				if _, msg := rpcError(t, resp, body); !strings.Contains(msg, tt.rpcMsg) {
					t.Fatalf("message %q, want ~%q", msg, tt.rpcMsg)
				}
			}
		})
	}
	// None opened a session that stays; the client's still works.
	waitFor(t, "only the client's session", func() bool { return hb.b.sessionCount() == 1 })
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the client after the bad requests: %v", err)
	}
}

// TestHTTPQueueFull sends three calls at once in a session that queues
// one: the third is refused, the first two run in order.
func TestHTTPQueueFull(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{MaxQueuedCalls: 1}, HTTPOptions{}, false)
	cs := hb.mustConnect(t)
	callText(t, cs, "order = []")
	dir := t.TempDir()
	started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	type answer struct {
		text  string
		isErr bool
	}
	callAsync := func(code string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
			if err != nil {
				ch <- answer{err.Error(), true}
				return
			}
			ch <- answer{res.Content[0].(*mcp.TextContent).Text, res.IsError}
		}()
		return ch
	}
	first := callAsync(fmt.Sprintf("import os, time\nopen(%q, 'w').close()\nwhile not os.path.exists(%q):\n    time.sleep(0.01)\norder.append(1)", started, gate))
	waitFor(t, "the first call to run", func() bool { _, err := os.Stat(started); return err == nil })
	second := callAsync("order.append(2)")
	q := hb.onlySession(t).queue
	waitFor(t, "the second call to queue", func() bool { return q.Waiters() == 1 })
	third := receive(t, "the third call", callAsync("order.append(3)"))
	if !third.isErr || !strings.Contains(third.text, "Not run: too many calls waiting in this session (1 wait behind the running one)") {
		t.Fatalf("the third call: %q, want refused as the queue is full", third.text)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, ch := range []<-chan answer{first, second} {
		if a := receive(t, "a queued call", ch); a.isErr {
			t.Fatalf("call %d: %q", i+1, a.text)
		}
	}
	if text, _ := callText(t, cs, "print(order)"); text != "[1, 2]" {
		t.Fatalf("order %s, want [1, 2]", text)
	}
}

// TestHTTPClientGoneInterruptsCall drops the HTTP request of a long call:
// the call is interrupted at once, and the session and its state go on.
func TestHTTPClientGoneInterruptsCall(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	cs := hb.mustConnect(t)
	callText(t, cs, "kept = 'me'")
	started := filepath.Join(t.TempDir(), "started")
	code := fmt.Sprintf("import time\nopen(%q, 'w').close()\ntime.sleep(60)", started)
	args, _ := json.Marshal(map[string]any{"code": code})
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"run_python","arguments":` + string(args) + `}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hb.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		if resp, err := hb.srv.Client().Do(req); err == nil {
			io.Copy(io.Discard, resp.Body) // until the request is cancelled
			resp.Body.Close()
		}
	}()
	waitFor(t, "the long call to run", func() bool { _, err := os.Stat(started); return err == nil })
	if n := hb.b.CallsInFlight(); n != 1 {
		t.Fatalf("%d calls in flight, want 1", n)
	}
	began := time.Now()
	cancel()
	receive(t, "the request to end", gone)
	waitFor(t, "the call to end", func() bool { return hb.b.CallsInFlight() == 0 })
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the call ended %v after its client went away", took)
	}
	if text, isErr := callText(t, cs, "print(kept)"); isErr || text != "me" {
		t.Fatalf("the next call: %q", text)
	}
	if started, _ := hb.eng.counts(); started != 1 {
		t.Fatalf("%d sandboxes started, want the one, kept", started)
	}
}

// TestHTTPCloseSessions ends every session at once, as a stopping server
// does.
func TestHTTPCloseSessions(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	clients := []*mcp.ClientSession{hb.mustConnect(t), hb.mustConnect(t)}
	for _, cs := range clients {
		callText(t, cs, "pass")
	}
	if _, live := hb.eng.counts(); live != 2 {
		t.Fatalf("%d sandboxes, want 2", live)
	}
	hb.b.CloseSessions()
	if n := hb.b.sessionCount(); n != 0 {
		t.Fatalf("%d sessions after CloseSessions", n)
	}
	hb.waitEnded(t, "every client session and sandbox to end")
	for i, cs := range clients {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "pass"}}); err == nil {
			t.Fatalf("client %d called after CloseSessions", i)
		}
	}
}

func TestReplicaPrefixesSessionIDs(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{Replica: "bridge-2"}, HTTPOptions{}, false)
	a, b := hb.mustConnect(t), hb.mustConnect(t)
	for _, cs := range []*mcp.ClientSession{a, b} {
		rest, ok := strings.CutPrefix(cs.ID(), "bridge-2.")
		if !ok || len(rest) != 26 {
			t.Fatalf("session ID %q, want bridge-2. and 26 random characters", cs.ID())
		}
	}
	if a.ID() == b.ID() {
		t.Fatal("two sessions share an ID")
	}
	plain := serveBridge(t, Options{}, HTTPOptions{}, false).mustConnect(t)
	if strings.Contains(plain.ID(), ".") || len(plain.ID()) != 26 {
		t.Fatalf("session ID without a replica: %q", plain.ID())
	}
}
