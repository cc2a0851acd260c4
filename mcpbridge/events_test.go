package mcpbridge

//lint:file-ignore SA1019 MCP log messages are deprecated by SEP-2577 (protocol 2026-07-28) but stay functional for at least twelve months; clients that set a level still get the bridge's events.

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// eventsClient connects a client that records the log messages it
// receives.
func eventsClient(t *testing.T, opts Options) (*mcp.ClientSession, func() []*mcp.LoggingMessageParams) {
	t.Helper()
	var got notes[*mcp.LoggingMessageParams]
	cs := newFixture(t, fixtureOptions{Options: opts, Client: mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { got.add(req.Params) },
	}}).connectInMemory(t)
	return cs, func() []*mcp.LoggingMessageParams {
		time.Sleep(100 * time.Millisecond) // notifications may trail the result a little
		return got.all()
	}
}

// messages returns the "message" of each event's data.
func messages(events []*mcp.LoggingMessageParams) []string {
	var out []string
	for _, e := range events {
		if m, ok := e.Data.(map[string]any); ok {
			out = append(out, string(e.Level)+": "+m["message"].(string))
		}
	}
	return out
}

func TestEventsOnlyAtTheClientsLevel(t *testing.T) {
	cs, got := eventsClient(t, Options{Session: entrypoint.Options{MaxOutputBytes: 1000}})
	ctx := context.Background()
	timeout := map[string]any{"code": "while True: pass", "timeout": 1}
	flood := map[string]any{"code": "print('x' * 5000)"}

	// No level set: nothing is sent.
	call(t, cs, timeout)
	if e := got(); len(e) != 0 {
		t.Fatalf("events before logging/setLevel: %v", messages(e))
	}
	// At "error", a timeout and a cut output (warnings) are not sent.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	call(t, cs, timeout)
	call(t, cs, flood)
	if e := got(); len(e) != 0 {
		t.Fatalf("warnings at level error: %v", messages(e))
	}
	// At "warning" they are, each once, from the bridge.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	call(t, cs, timeout)
	call(t, cs, flood)
	e := got()
	want := []string{
		"warning: a call ran past its timeout and was stopped",
		"warning: a call's output was over the cap; the rest was dropped (MCP_BRIDGE_MAX_OUTPUT)",
	}
	if m := messages(e); len(m) != 2 || m[0] != want[0] || m[1] != want[1] {
		t.Fatalf("events %q, want %q", m, want)
	}
	if e[0].Logger != eventLogger {
		t.Errorf("logger %q", e[0].Logger)
	}
}

func TestEventsSandboxReplaced(t *testing.T) {
	cs, got := eventsClient(t, Options{})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	call(t, cs, map[string]any{"code": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"})
	call(t, cs, map[string]any{"code": "print(1)"})
	m := messages(got())
	if len(m) != 2 || m[0] != "error: the sandbox failed" || m[1] != "warning: the sandbox was replaced; earlier state is gone" {
		t.Fatalf("events %q", m)
	}
}

func TestEventsProxiedServerRestarted(t *testing.T) {
	cs, got := eventsClient(t, Options{Registry: stubRegistry(t)})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	servers := []any{"stub"}
	call(t, cs, map[string]any{"servers": servers, "code": "try:\n    await mcp_stub.crash()\nexcept Exception as e:\n    print(type(e).__name__)"})
	_, text, _ := call(t, cs, map[string]any{"servers": servers, "code": "print(await mcp_stub.echo(message='back'))"})
	if text != "back" {
		t.Fatalf("after the restart: %q", text)
	}
	m := messages(got())
	if len(m) == 0 {
		t.Fatal("no event for a proxied server that stopped and was restarted")
	}
	for _, s := range m {
		if s != "warning: a proxied server stopped during a call; it is restarted on next use" &&
			s != "warning: a proxied server had stopped; it is restarted" {
			t.Errorf("event %q", s)
		}
	}
}
