//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpToken is the bearer token of the bridges that take one.
const httpToken = "integration-token-0123456789abcdef"

// TestHTTPSessions serves several clients from one `serve -http` process
// on one engine: a bearer token, no warm pool (so every container is a
// session's), at most 2 sessions, and the npm server-memory configured
// twice: per session (the default) and "shared": true. In order:
// isolation of two sessions, the session limit, DELETE, the guard (token,
// Origin, Host), bad input and idle connections, the TypeScript SDK
// client, a client cancelling a call mid-way, and DELETE during a call.
func TestHTTPSessions(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		home := t.TempDir()
		memoryServers(t, home)
		b := startHTTPBridge(t, e, httpOpts{env: []string{"HOME=" + home, "MCP_BRIDGE_POOL_SIZE=0",
			"MCP_BRIDGE_MAX_SESSIONS=2", "MCP_BRIDGE_HTTP_TOKEN=" + httpToken}})
		if n := len(b.containers(t)); n != 0 {
			t.Fatalf("%d containers with MCP_BRIDGE_POOL_SIZE=0 before any client", n)
		}
		sa, sb := b.session(t, nil), b.session(t, nil)
		var hostA, hostB string

		// Each session has its own sandbox and its own instance of a
		// server that is not shared; a shared server is one instance.
		// The memory helpers and saved tools are the bridge's, in its
		// state directory: every session sees what any session saved
		// (README, "What sessions share").
		t.Run("isolation", func(t *testing.T) {
			if text, isErr := runPython(t, sa, map[string]any{"code": "secret = 'set in A'\nprint(secret)"}); isErr || text != "set in A" {
				t.Fatalf("session A: %q", text)
			}
			text, _ := runPython(t, sb, map[string]any{"code": "try:\n    print(secret)\nexcept NameError as e:\n    print('NameError:', e)"})
			if text != "NameError: name 'secret' is not defined" {
				t.Fatalf("session B sees A's variable: %q", text)
			}
			hostA, hostB = b.sandboxOf(t, sa), b.sandboxOf(t, sb)
			if hostA == hostB {
				t.Fatalf("sessions A and B share the sandbox %s", hostA)
			}
			if n := len(b.containers(t)); n != 2 {
				t.Fatalf("%d containers for two sessions, want 2", n)
			}
			servers := []string{"memory", "sharedmem"}
			text, isErr := runPython(t, sa, map[string]any{"servers": servers, "code": `for m in (mcp_memory, mcp_sharedmem):
    await m.create_entities(entities=[{'name': 'alpha', 'entityType': 'test', 'observations': ['made in A']}])
print('created')`})
			if isErr || text != "created" {
				t.Fatalf("creating entities in A: %q", text)
			}
			text, isErr = runPython(t, sb, map[string]any{"servers": servers, "code": `own = str(await mcp_memory.read_graph())
shared = str(await mcp_sharedmem.read_graph())
print('own', 'made in A' in own)
print('shared', 'made in A' in shared)
await mcp_memory.create_entities(entities=[{'name': 'beta', 'entityType': 'test', 'observations': ['made in B']}])
print('own now', 'made in B' in str(await mcp_memory.read_graph()))`})
			if isErr || text != "own False\nshared True\nown now True" {
				t.Fatalf("server-memory seen from B: %q, want A's entity in the shared instance only", text)
			}
			text, isErr = runPython(t, sa, map[string]any{"code": "print('made in B' in str(await mcp_memory.read_graph()))"})
			if isErr || text != "False" {
				t.Fatalf("A sees B's entity in its own server-memory: %q", text)
			}
			text, isErr = runPython(t, sa, map[string]any{"code": "save_memory('http-note', {'by': 'A'})\n" +
				"def triple(x):\n    \"Three times x.\"\n    return 3 * x\nsave_tool(triple)\nprint('saved')"})
			if isErr || text != "saved" {
				t.Fatalf("saving in A: %q", text)
			}
			text, isErr = runPython(t, sb, map[string]any{"code": "print(load_memory('http-note'))\nprint(triple(5))"})
			if isErr || text != "{'by': 'A'}\n15" {
				t.Fatalf("B reading what A saved: %q, want the memory and the tool (they are bridge-wide)", text)
			}
		})

		t.Run("limits", func(t *testing.T) {
			r := b.raw(t, "POST", "", initializeRequest(), nil)
			var msg struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			json.Unmarshal([]byte(r.body), &msg)
			if r.status != http.StatusServiceUnavailable || !strings.Contains(msg.Error.Message, "MCP_BRIDGE_MAX_SESSIONS") || r.header.Get("Retry-After") == "" {
				t.Fatalf("a third session: %d %q (Retry-After %q), want 503 naming MCP_BRIDGE_MAX_SESSIONS", r.status, r.body, r.header.Get("Retry-After"))
			}
			if cs, err := b.dial(httpToken, nil); err == nil {
				cs.Close()
				t.Fatal("the go-sdk client opened a third session")
			}
			if text, _ := runPython(t, sa, map[string]any{"code": "print(secret)"}); text != "set in A" {
				t.Fatalf("A after the refusal: %q", text)
			}
			if text, _ := runPython(t, sb, map[string]any{"code": "print(triple(2))"}); text != "6" {
				t.Fatalf("B after the refusal: %q", text)
			}
		})

		t.Run("delete", func(t *testing.T) {
			sid := sa.ID()
			if err := sa.Close(); err != nil { // DELETE
				t.Fatalf("closing A: %v", err)
			}
			waitFor(t, 30*time.Second, "A's container removed after DELETE", func() bool { return !b.has(t, hostA) })
			if !b.has(t, hostB) {
				t.Fatal("B's container went with A's")
			}
			if r := b.raw(t, "POST", sid, rpc(2, "tools/list", nil), nil); r.status != http.StatusNotFound {
				t.Fatalf("a request of the deleted session: %d %q, want 404", r.status, r.body)
			}
			if r := b.raw(t, "DELETE", sid, nil, nil); r.status != http.StatusNotFound {
				t.Fatalf("DELETE of the deleted session: %d %q, want 404", r.status, r.body)
			}
			d := b.session(t, nil) // A's place is free
			if text, isErr := runPython(t, d, map[string]any{"code": "print(load_memory('http-note')['by'])"}); isErr || text != "A" {
				t.Fatalf("a new session: %q", text)
			}
			d.Close()
			sb.Close()
			waitFor(t, 30*time.Second, "every container removed after DELETE", func() bool { return len(b.containers(t)) == 0 })
		})

		t.Run("guard", func(t *testing.T) {
			port := b.url[strings.LastIndex(b.url, ":")+1 : strings.LastIndex(b.url, "/")]
			probe := rpc(1, "tools/list", nil)
			cases := []struct {
				name   string
				edit   func(*http.Request)
				status int
				want   string // in the body, or the WWW-Authenticate header of a 401
			}{
				{"the token (passes: 404 for an unknown session)", nil, http.StatusNotFound, ""},
				{"no token", func(r *http.Request) { r.Header.Del("Authorization") }, http.StatusUnauthorized, "MCP_BRIDGE_HTTP_TOKEN"},
				{"a wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong-token-0123456789abcdef") }, http.StatusUnauthorized, "invalid bearer token"},
				{"basic auth", func(r *http.Request) { r.SetBasicAuth("user", httpToken) }, http.StatusUnauthorized, "missing bearer token"},
				{"a foreign Origin", func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, http.StatusForbidden, "Origin"},
				{"a loopback Origin (passes)", func(r *http.Request) { r.Header.Set("Origin", "http://localhost:3000") }, http.StatusNotFound, ""},
				{"Host evil.example", func(r *http.Request) { r.Host = "evil.example" }, http.StatusForbidden, "DNS rebinding"},
				{"Host evil.example with the port", func(r *http.Request) { r.Host = "evil.example:" + port }, http.StatusForbidden, "DNS rebinding"},
				{"Host localhost (passes)", func(r *http.Request) { r.Host = "localhost:" + port }, http.StatusNotFound, ""},
			}
			for _, tc := range cases {
				r := b.raw(t, "POST", "unknown-session-id", probe, tc.edit)
				if r.status != tc.status || !strings.Contains(r.body, tc.want) {
					t.Errorf("%s: %d %q, want %d with %q", tc.name, r.status, r.body, tc.status, tc.want)
				}
				if ch := r.header.Get("WWW-Authenticate"); (r.status == http.StatusUnauthorized) != strings.HasPrefix(ch, "Bearer ") {
					t.Errorf("%s: %d with WWW-Authenticate %q", tc.name, r.status, ch)
				}
			}
			r := b.raw(t, "POST", "", initializeRequest(), func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") })
			if ch := r.header.Get("WWW-Authenticate"); r.status != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) {
				t.Errorf("initialize with a wrong token: %d, WWW-Authenticate %q", r.status, ch)
			}
			for _, token := range []string{"", "wrong-token-0123456789abcdef"} {
				if cs, err := b.dial(token, nil); err == nil {
					cs.Close()
					t.Errorf("the go-sdk client connected with token %q", token)
				} else if !strings.Contains(err.Error(), "Unauthorized") && !strings.Contains(err.Error(), "token") {
					t.Errorf("the go-sdk client with token %q: %v", token, err)
				}
			}
		})

		t.Run("bad input", func(t *testing.T) {
			cs := b.session(t, nil)
			runPython(t, cs, map[string]any{"code": "n = 1"})
			big := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`), bytes.Repeat([]byte("a"), 4<<20)...)
			big = append(big, `"}}`...)
			for _, tc := range []struct {
				name, sid string
				body      []byte
				status    int
			}{
				{"garbage, no session", "", []byte("{this is not JSON"), http.StatusBadRequest},
				{"garbage in the session", cs.ID(), []byte("\x00\xffnot json at all"), http.StatusBadRequest},
				{"over 4 MiB, no session", "", big, http.StatusRequestEntityTooLarge},
				{"over 4 MiB in the session", cs.ID(), big, http.StatusRequestEntityTooLarge},
				{"an unknown session", "0123456789ABCDEFGHIJKLMNOPQRSTUV", rpc(3, "tools/list", nil), http.StatusNotFound},
			} {
				if r := b.raw(t, "POST", tc.sid, tc.body, nil); r.status != tc.status {
					t.Errorf("%s: %d %.200q, want %d", tc.name, r.status, r.body, tc.status)
				}
			}
			if text, isErr := runPython(t, cs, map[string]any{"code": "n += 1\nprint(n)"}); isErr || text != "2" {
				t.Fatalf("the session after bad input: %q", text)
			}
			// 200 idle TCP connections, opened and closed.
			u, _ := url.Parse(b.url)
			base := b.steadyFDs(t)
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range 200 {
				c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
				if err != nil {
					t.Fatalf("connection %d: %v", len(conns)+1, err)
				}
				conns = append(conns, c)
			}
			waitFor(t, 10*time.Second, "the server holds the 200 connections", func() bool { return b.fds(t) >= base+195 })
			if text, isErr := runPython(t, cs, map[string]any{"code": "n += 1\nprint(n)"}); isErr || text != "3" {
				t.Fatalf("a call while 200 connections idle: %q", text)
			}
			for _, c := range conns {
				c.Close()
			}
			conns = nil
			waitFor(t, 15*time.Second, fmt.Sprintf("the server's descriptors back near their %d before the connections", base),
				func() bool { return b.fds(t) <= base+8 })
			if text, isErr := runPython(t, cs, map[string]any{"code": "n += 1\nprint(n)"}); isErr || text != "4" {
				t.Fatalf("the session after the connections: %q", text)
			}
		})

		// The TypeScript SDK's StreamableHTTPClientTransport: the token in
		// requestInit's headers, state across calls, terminateSession().
		t.Run("typescript client", func(t *testing.T) {
			var out struct {
				NoToken      string  `json:"noToken"`
				SessionID    string  `json:"sessionId"`
				SessionAfter *string `json:"sessionAfter"`
				Results      []struct {
					IsError bool   `json:"isError"`
					Text    string `json:"text"`
				} `json:"results"`
			}
			calls := []map[string]any{{"code": "import socket\nkept = 20\nprint(socket.gethostname())"}, {"code": "print(kept + 1)"}}
			runNode(t, "http.mjs", []string{"HOME=" + t.TempDir()}, map[string]any{"url": b.url, "token": httpToken, "calls": calls}, &out)
			if !strings.Contains(out.NoToken, "401") || !strings.Contains(out.NoToken, "missing bearer token") {
				t.Errorf("connecting without the token: %q, want the 401 and its reason", out.NoToken)
			}
			if len(out.Results) != 2 || out.Results[0].IsError || len(out.Results[0].Text) < 12 || out.Results[1].Text != "21" {
				t.Fatalf("results %+v", out.Results)
			}
			if out.SessionID == "" || out.SessionAfter != nil {
				t.Fatalf("session id %q, after terminateSession %v", out.SessionID, out.SessionAfter)
			}
			// Only the DELETE ends it: the session would otherwise live
			// for MCP_BRIDGE_SESSION_IDLE_TIMEOUT (30 min).
			host := out.Results[0].Text
			waitFor(t, 30*time.Second, "the TypeScript session's container removed", func() bool { return !b.has(t, host) })
			if r := b.raw(t, "POST", out.SessionID, rpc(2, "tools/list", nil), nil); r.status != http.StatusNotFound {
				t.Fatalf("the terminated session: %d %q, want 404", r.status, r.body)
			}
		})

		// A client cancels its call mid-way (the go-sdk cancels the
		// request): the call is interrupted, the session keeps its
		// state, other sessions go on, and DELETE removes the container.
		t.Run("cancelled call", func(t *testing.T) {
			copts, started := progressSignal("long-call-started")
			cs, other := b.session(t, copts), b.session(t, nil)
			runPython(t, cs, map[string]any{"code": "kept = 7"})
			host := b.sandboxOf(t, cs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := progressCall(ctx, cs, "import time\nprint('long-call-started', flush=True)\ntime.sleep(60)")
				errc <- err
			}()
			select {
			case <-started:
			case err := <-errc:
				t.Fatalf("the long call ended before it was cancelled: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("no progress notification of the long call's output")
			}
			cancel()
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("the cancelled call returned no error")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled call did not return")
			}
			began := time.Now()
			if text, isErr := runPython(t, cs, map[string]any{"code": "print(kept)"}); isErr || text != "7" {
				t.Fatalf("the session after the cancelled call: %q", text)
			}
			if took := time.Since(began); took > 20*time.Second {
				t.Fatalf("the next call took %v: the cancelled call kept running", took)
			}
			if text, isErr := runPython(t, other, map[string]any{"code": "print('other')"}); isErr || text != "other" {
				t.Fatalf("the other session: %q", text)
			}
			cs.Close()
			waitFor(t, 30*time.Second, "the container of the cancelling client removed after DELETE", func() bool { return !b.has(t, host) })
		})

		// DELETE while a call of the session runs ends the session at
		// once: the call is interrupted, the container removed.
		t.Run("DELETE during a call", func(t *testing.T) {
			copts, started := progressSignal("long-call-started")
			cs := b.session(t, copts)
			host := b.sandboxOf(t, cs)
			ended := make(chan string, 1)
			go func() {
				res, err := progressCall(context.Background(), cs, "import time\nprint('long-call-started', flush=True)\ntime.sleep(60)")
				switch {
				case err != nil:
					ended <- "error: " + err.Error()
				case res.IsError:
					ended <- "error result: " + res.Content[0].(*mcp.TextContent).Text
				default:
					ended <- ""
				}
			}()
			select {
			case <-started:
			case <-time.After(time.Minute):
				t.Fatal("no progress notification of the long call's output")
			}
			began := time.Now()
			r := b.raw(t, "DELETE", cs.ID(), nil, nil)
			if took := time.Since(began); r.status != http.StatusNoContent || took > 10*time.Second {
				t.Errorf("DELETE during a call: %d after %v, want 204 at once", r.status, took)
			}
			select {
			case how := <-ended:
				if how == "" {
					t.Error("the call succeeded across the DELETE of its session")
				}
			case <-time.After(15 * time.Second):
				t.Error("the call did not end with its session")
			}
			waitFor(t, 15*time.Second, "the container removed after DELETE during a call", func() bool { return !b.has(t, host) })
		})
	})
}

// TestHTTPPoolAndIdleExpiry checks the warm pool (MCP_BRIDGE_POOL_SIZE=1: a
// started sandbox before any client; a new session's first call answered
// from it, at least 3× faster than a cold start with POOL_SIZE=0; the pool
// refills) and MCP_BRIDGE_SESSION_IDLE_TIMEOUT=2: an idle session's
// container is removed, and so is that of a client that vanished mid-call
// without DELETE.
func TestHTTPPoolAndIdleExpiry(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cold := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=0"}})
		cs := cold.session(t, nil)
		began := time.Now()
		runPython(t, cs, map[string]any{"code": "print('cold')"})
		coldTook := time.Since(began)
		cs.Close()

		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=2", "MCP_BRIDGE_LOG_LEVEL=DEBUG"}})
		ready := func() int { return strings.Count(b.log.String(), `msg="pooled sandbox ready"`) }
		waitFor(t, time.Minute, "the pooled sandbox ready before any client", func() bool { return ready() == 1 })
		spare := b.containers(t)
		if len(spare) != 1 {
			t.Fatalf("%d containers with a pool of 1 before any client", len(spare))
		}
		cs = b.session(t, nil)
		began = time.Now()
		host, isErr := runPython(t, cs, map[string]any{"code": "import socket\nprint(socket.gethostname())"})
		warmTook := time.Since(began)
		lastRequest := time.Now()
		if isErr || !strings.HasPrefix(spare[0].ID, host) {
			t.Fatalf("the first call ran in %q, not in the pooled sandbox %s", host, spare[0].ID)
		}
		t.Logf("first call: %v cold (POOL_SIZE=0), %v from the pool (%.1f×)", coldTook, warmTook, float64(coldTook)/float64(warmTook))
		if coldTook < 3*warmTook {
			t.Errorf("the first call from the pool took %v, a cold one %v: want at least 3× faster", warmTook, coldTook)
		}
		waitFor(t, time.Minute, "the pool refilled", func() bool { return ready() == 2 && len(b.containers(t)) == 2 })

		// The session makes no request: it ends after 2 s of idleness.
		waitFor(t, 20*time.Second, "the idle session's container removed", func() bool { return !b.has(t, host) })
		if idle := time.Since(lastRequest); idle < 2*time.Second {
			t.Errorf("the session ended %v after its last request, before its idle timeout", idle)
		}
		if n := len(b.containers(t)); n != 1 {
			t.Errorf("%d containers after the idle session ended, want the 1 spare", n)
		}
		if r := b.raw(t, "POST", cs.ID(), rpc(2, "tools/list", nil), nil); r.status != http.StatusNotFound {
			t.Errorf("a request of the expired session: %d %q, want 404", r.status, r.body)
		}

		// A client vanishes mid-call: no DELETE, its connection dropped.
		sid := b.rawSession(t)
		line := b.vanishMidCall(t, sid, "import socket, time\nprint('vanish-marker', socket.gethostname(), flush=True)\ntime.sleep(60)", "vanish-marker")
		m := regexp.MustCompile(`vanish-marker ([0-9a-f]{12})`).FindStringSubmatch(line)
		if m == nil || !b.has(t, m[1]) {
			t.Fatalf("the vanishing call's sandbox: %q", line)
		}
		waitFor(t, 20*time.Second, "the vanished client's container removed", func() bool { return !b.has(t, m[1]) })
		waitFor(t, time.Minute, "the pool back to its 1 spare", func() bool { return ready() == 3 && len(b.containers(t)) == 1 })
		other := b.session(t, nil)
		if text, isErr := runPython(t, other, map[string]any{"code": "print('still serving')"}); isErr || text != "still serving" {
			t.Fatalf("a session after the vanished client: %q", text)
		}

		// Stop at once: neither the session just ended by DELETE nor the
		// spare the pool has begun to start (its first call took the
		// last) may outlive the process.
		other.Close()
		b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
			if b.err != nil {
				t.Errorf("serve exited with %v after SIGTERM, want 0", b.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not exit within 10 s of SIGTERM")
		}
		if left := b.containers(t); len(left) != 0 {
			t.Errorf("%d containers left by serve stopped right after a DELETE and a pool refill began: %v", len(left), left)
		}
	})
}

// TestHTTPTLSAndShutdown serves HTTPS with a self-signed certificate made
// here, and stops the server with SIGTERM during a long call: the call
// ends (an error result or a closed connection), the process exits 0
// within 10 s, and no container of it (session or pool) is left.
func TestHTTPTLSAndShutdown(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		certFile, keyFile, roots := selfSignedCert(t, t.TempDir())
		// A drain longer than the test waits: only the second signal
		// below ends the long call in time.
		b := startHTTPBridge(t, e, httpOpts{env: []string{"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_DRAIN_TIMEOUT=60"},
			args: []string{"-tls-cert", certFile, "-tls-key", keyFile}, roots: roots})
		if !strings.HasPrefix(b.url, "https://127.0.0.1:") {
			t.Fatalf("serving at %s", b.url)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := mcp.NewClient(&mcp.Implementation{Name: "untrusting", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: &http.Client{}, MaxRetries: -1}, nil)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("a client that does not trust the certificate: %v", err)
		}
		resp, err := http.Post("http://"+strings.TrimPrefix(b.url, "https://"), "application/json", bytes.NewReader(initializeRequest()))
		if err != nil {
			t.Fatalf("plain HTTP to the HTTPS port: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("plain HTTP to the HTTPS port: %d, session %q; want 400 and no session", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}

		copts, started := progressSignal("long-call-started")
		cs := b.session(t, copts)
		if text, isErr := runPython(t, cs, map[string]any{"code": "print('over TLS')"}); isErr || text != "over TLS" {
			t.Fatalf("a call over TLS: %q", text)
		}
		waitFor(t, time.Minute, "the session's sandbox and a pooled spare", func() bool { return len(b.containers(t)) == 2 })
		type outcome struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := progressCall(context.Background(), cs, "import time\nprint('long-call-started', flush=True)\ntime.sleep(60)\nprint('finished')")
			done <- outcome{res, err}
		}()
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("no progress notification of the long call's output")
		}
		signalled := time.Now()
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-b.done:
			t.Fatal("serve exited at the first SIGTERM with a call in flight and a 60 s drain")
		case <-time.After(time.Second):
		}
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-b.done:
			if b.err != nil {
				t.Errorf("serve exited with %v after SIGTERM, want 0", b.err)
			}
			t.Logf("serve exited %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not exit within 10 s of SIGTERM")
		}
		select {
		case o := <-done:
			switch {
			case o.err != nil:
				t.Logf("the long call: %v", o.err)
			case o.res.IsError:
				t.Logf("the long call: %s", o.res.Content[0].(*mcp.TextContent).Text)
			default:
				t.Errorf("the long call succeeded across the shutdown: %s", o.res.Content[0].(*mcp.TextContent).Text)
			}
		case <-time.After(15 * time.Second):
			t.Error("the long call did not end with the server")
		}
		log := b.log.String()
		if !strings.Contains(log, `msg="stopping: no new sessions; calls in flight may finish (a second signal ends them now)" calls=1`) || !strings.Contains(log, `msg=stopped`) {
			t.Errorf("the stop was not logged with the call in flight")
		}
		if n := len(b.containers(t)); n != 0 {
			t.Errorf("%d containers of serve left after it exited", n)
		}
	})
}
