package mcpbridge

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// TestHandleKeepsState: under 2026-07-28 a call without a handle starts a
// sandbox and gives its handle, once; a call with it continues there;
// another call without one starts another sandbox.
func TestHandleKeepsState(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	cs := hb.connectStateless(t, "")
	res, text, sc := call(t, cs, map[string]any{"code": "x = 41\nprint('set')"})
	h, _ := sc["session"].(string)
	if res.IsError || !strings.HasPrefix(h, handle.Prefix) || text != mintedLine(h)+"\nset" {
		t.Fatalf("first call: %v %q %v", res.IsError, text, sc)
	}
	res, text, sc = call(t, cs, map[string]any{"code": "print(x + 1)", "session": h})
	if res.IsError || text != "42" || sc["session"] != nil {
		t.Fatalf("call with the handle: %v %q %v", res.IsError, text, sc)
	}
	res, text, sc = call(t, cs, map[string]any{"code": "print(x)"})
	if !res.IsError || !strings.Contains(text, "NameError") || sc["session"] == h || sc["session"] == nil {
		t.Fatalf("a call without the handle: %v %q %v", res.IsError, text, sc)
	}
	if started, live := hb.eng.counts(); started != 2 || live != 2 {
		t.Fatalf("%d sandboxes started, %d live; want 2 and 2", started, live)
	}
	if hb.clientSessions() != 0 {
		t.Fatalf("%d MCP-session sandboxes; handles keep theirs apart", hb.clientSessions())
	}
}

// TestHandleRefusals: truncated, padded, forged, foreign and other-key
// handles, and one past the limit, are refused each with its own
// message, and touch nothing.
func TestHandleRefusals(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-token"
	hb := serveBridge(t, Options{Handles: HandleOptions{MaxPerClient: 2}}, HTTPOptions{Token: token}, false)
	cs := hb.connectStateless(t, token)
	_, _, sc := call(t, cs, map[string]any{"code": "x = 1"})
	h := sc["session"].(string)
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(h, handle.Prefix))
	raw[len(raw)-20] ^= 1
	forged := handle.Prefix + base64.RawURLEncoding.EncodeToString(raw)
	other, _ := handle.NewKeyring(strings.Repeat("k", 40))
	otherH, _ := other.Mint(handle.Sandbox{Ref: "local-1"}, token, time.Now())
	foreignH, _ := hb.b.handles.keys.Mint(handle.Sandbox{Ref: "local-1"}, "another-token-0123456", time.Now())
	unknownH, _ := hb.b.handles.keys.Mint(handle.Sandbox{Ref: "local-99"}, token, time.Now())
	for _, tc := range []struct{ name, h, want string }{
		{"truncated", h[:len(h)-3], "not a sandbox handle"},
		{"padded", h + "==", "not a sandbox handle"},
		{"not a string", "", "'session' must be a string"},
		{"forged", forged, "forged"},
		{"another key", otherH, "minted by another bridge"},
		{"another client", foreignH, "is not yours: it belongs to another client"},
		{"unknown sandbox", unknownH, "holds no sandbox of it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"code": "x = 2", "session": tc.h}
			if tc.h == "" {
				args["session"] = 7
			}
			res, text, _ := call(t, cs, args)
			if !res.IsError || !strings.Contains(text, tc.want) {
				t.Fatalf("%v %q, want an error saying %q", res.IsError, text, tc.want)
			}
		})
	}
	if res, text, _ := call(t, cs, map[string]any{"code": "print(x)", "session": h}); res.IsError || text != "1" {
		t.Fatalf("the real handle after the refusals: %q", text)
	}
	call(t, cs, map[string]any{"code": "pass"}) // the second handle
	res, text, sc := call(t, cs, map[string]any{"code": "pass"})
	if !res.IsError || !strings.Contains(text, "MCP_BRIDGE_MAX_HANDLES") || sc["session"] != nil {
		t.Fatalf("a third handle past the limit of 2: %v %q", res.IsError, text)
	}
	if started, _ := hb.eng.counts(); started != 2 {
		t.Fatalf("%d sandboxes started, want 2", started)
	}
}

// TestHandleExpires: a handle whose sandbox stopped idle says so, and
// starts nothing.
func TestHandleExpires(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{Handles: HandleOptions{IdleTimeout: 300 * time.Millisecond}}, HTTPOptions{}, false)
	cs := hb.connectStateless(t, "")
	_, _, sc := call(t, cs, map[string]any{"code": "x = 1"})
	h := sc["session"].(string)
	waitFor(t, "the idle sandbox to stop", func() bool { _, live := hb.eng.counts(); return live == 0 })
	for range 2 {
		res, text, _ := call(t, cs, map[string]any{"code": "print(x)", "session": h})
		if !res.IsError || !strings.Contains(text, "without calls") || !strings.Contains(text, "leave session out") {
			t.Fatalf("the expired handle: %v %q", res.IsError, text)
		}
	}
	if started, _ := hb.eng.counts(); started != 1 {
		t.Fatalf("%d sandboxes started, want 1", started)
	}
}

// TestHandleInSession: a 2025-11-25 session honours a handle it is
// given, and keeps its own sandbox for calls without one.
func TestHandleInSession(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	modern := hb.connectStateless(t, "")
	_, _, sc := call(t, modern, map[string]any{"code": "x = 'handle'"})
	h := sc["session"].(string)
	old := hb.mustConnect(t)
	callText(t, old, "x = 'session'")
	if res, text, _ := call(t, old, map[string]any{"code": "print(x)", "session": h}); res.IsError || text != "handle" {
		t.Fatalf("the handle in a session: %q", text)
	}
	if text, _ := callText(t, old, "print(x)"); text != "session" {
		t.Fatalf("the session's own sandbox: %q", text)
	}
	_ = context.Background
}

// TestHandleResources: the whole output of a handle's call cut to the
// budget is read with the handle in its URI, and only with it.
func TestHandleResources(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{OutputBudget: 4 << 10}, HTTPOptions{}, false)
	cs := hb.connectStateless(t, "")
	res, _, sc := call(t, cs, map[string]any{"code": "print('x' * 20000)"})
	h, _ := sc["session"].(string)
	uri, _ := sc["fullOutput"].(string)
	if res.IsError || h == "" || !strings.HasSuffix(uri, sessionQuery+h) {
		t.Fatalf("a cut output: %v, handle %q, URI %q", res.IsError, h, uri)
	}
	got, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(got.Contents) != 1 || !strings.Contains(got.Contents[0].Text, strings.Repeat("x", 20000)) {
		t.Fatalf("reading %s: %v %.200v", uri, err, got)
	}
	other, _ := handle.NewKeyring(strings.Repeat("o", 40))
	forged, _ := other.Mint(handle.Sandbox{Ref: "local-1"}, "", time.Now())
	base, _ := splitSession(uri)
	for _, bad := range []string{base, base + sessionQuery + forged, base + sessionQuery + h[:len(h)-2]} {
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: bad}); err == nil {
			t.Errorf("reading %s succeeded", bad)
		}
	}
}

// TestHandleTableDetached: only held sandboxes without a live attachment
// and without a call are let go, and a call that found one just before
// is told to call again.
func TestHandleTableDetached(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{}, HTTPOptions{}, false)
	b := hb.b
	idle, live, busy := b.newClientSession(), b.newClientSession(), b.newClientSession()
	t.Cleanup(func() { idle.close(); live.close(); busy.close() })
	if err := live.session.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	leave, err := busy.queue.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table := newHandleTable()
	for key, cs := range map[string]*clientSession{"idle": idle, "live": live, "busy": busy} {
		table.add(key, &heldSandbox{cs: cs})
	}
	got := table.detached()
	if len(got) != 1 || got[0].cs != idle || !idle.dropped.Load() {
		t.Fatalf("detached %v, want the idle one only", got)
	}
	if h, _ := table.get("idle"); h != nil {
		t.Fatal("the detached sandbox is still held")
	}
	leave()
	idle.queue.Leave()
	res, _ := b.execute(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}, idle, callArgs{code: "pass", timeout: time.Second}, b.log, nil, nil)
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "call again") {
		t.Fatalf("a call on a detached sandbox: %+v", res.Content[0])
	}
}
