package servers

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/stubserver"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// The environment of the stub server (internal/stubserver), which the
// test binary serves on stdio instead of running tests, so that the
// servers proxied are real processes.
const (
	stubServerEnv     = stubserver.ServerEnv
	stubClientInfoEnv = stubserver.ClientInfoEnv
)

func TestMain(m *testing.M) {
	stubserver.Main()
	os.Exit(m.Run())
}

// write writes content to path, making its directory.
func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProxiesAnnounceTheBridgeVersion checks that a proxied server is
// told the bridge's name and version (Options.Version) at initialize.
func TestProxiesAnnounceTheBridgeVersion(t *testing.T) {
	home := t.TempDir()
	self, _ := os.Executable()
	write(t, filepath.Join(home, "MCPs", "info.json"), `{"mcpServers": {
		"info": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1", "`+stubClientInfoEnv+`": "1"}}
	}}`)
	reg := discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})
	pool := newPool(reg, "1.2.3", slog.New(slog.DiscardHandler), nil, false)
	defer pool.close()
	cfg, ok := reg.Lookup("info")
	if !ok {
		t.Fatal("server info is not configured")
	}
	res, err := pool.call(context.Background(), cfg, "client_info", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != discovery.ImplementationName+" 1.2.3" {
		t.Fatalf("the server was told %q, want %q", got, discovery.ImplementationName+" 1.2.3")
	}
}

// A fakeCall is a run_python call in progress that counts its proxied
// calls.
type fakeCall struct{ n int64 }

func (c *fakeCall) CountToolCall() int64 { c.n++; return c.n }

// TestRouteHooks checks that a route holds a session's calls to the
// policy and leaves the rest to the bridge's hooks: a denied tool is
// refused with a denied record, a tool to confirm is confirmed through
// Confirm with the call in progress, every call counts against
// max_tool_calls, the calls that reach a server are counted by outcome, and
// a server the policy forbids to load is neither discovered nor called.
func TestRouteHooks(t *testing.T) {
	home := t.TempDir()
	self, _ := os.Executable()
	write(t, filepath.Join(home, "MCPs", "stub.json"), `{"mcpServers": {
		"stub": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}},
		"hidden": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}}
	}}`)
	reg := discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	write(t, policyFile, `{"max_tool_calls": 3, "servers": {
		"stub": {"deny": ["crash"], "confirm": ["get-sum"]}, "hidden": {"load": false}}}`)
	var counted, records []string
	set := New(&Options{Registry: reg, Policy: policy.Open(policyFile, reg.StateDir(), slog.New(slog.DiscardHandler)),
		Counted: func(server, tool, outcome string) { counted = append(counted, server+"."+tool+" "+outcome) }})
	defer set.Close()
	call := &fakeCall{}
	var confirmed []Call
	route := set.NewRoute(&Hooks{
		Call: func() Call { return call },
		Confirm: func(ctx context.Context, c Call, p *policy.Policy, v policy.Verdict, server, tool string, args map[string]any) (string, []any, error) {
			confirmed = append(confirmed, c)
			return "accepted", []any{"answered_via", "client"}, nil
		},
		Audit: func(p *policy.Policy, server, tool string, args map[string]any, began time.Time, outcome string, err error, extra ...any) {
			records = append(records, server+"."+tool+" "+outcome)
		},
	})
	defer route.Close()

	if got, err := set.Discovered(); err != nil || len(got) != 1 || got[0]["name"] != "stub" {
		t.Fatalf("discovered %v, %v; want stub alone", got, err)
	}
	ctx := context.Background()
	if _, err := route.Call(ctx, "stub", "crash", nil); !errors.Is(err, policy.ErrRefused) {
		t.Fatalf("a denied tool: %v", err)
	}
	res, err := route.Call(ctx, "stub", "get-sum", map[string]any{"a": 1, "b": 2})
	if err != nil || res.IsError || len(confirmed) != 1 || confirmed[0] != call {
		t.Fatalf("a tool to confirm: %v, %v, confirmed %v", res, err, confirmed)
	}
	if _, err := route.Call(ctx, "stub", "echo", map[string]any{"message": "hi"}); err != nil {
		t.Fatalf("an allowed tool: %v", err)
	}
	if _, err := route.Call(ctx, "stub", "echo", map[string]any{"message": "hi"}); !errors.Is(err, policy.ErrRefused) || !strings.Contains(err.Error(), "max_tool_calls") {
		t.Fatalf("the fourth call of a run_python call: %v", err)
	}
	call = &fakeCall{} // the next run_python call
	if err := route.RefuseUnloaded("hidden", "echo", nil); !errors.Is(err, policy.ErrRefused) || !strings.Contains(err.Error(), "may not be loaded") {
		t.Fatalf("a server the policy forbids to load: %v", err)
	}
	if err := route.Start(ctx, []string{"stub", "hidden"}); !errors.Is(err, policy.ErrRefused) {
		t.Fatalf("loading a server the policy forbids: %v", err)
	}
	if want := []string{"stub.crash denied", "stub.get-sum accepted", "stub.get-sum ok", "stub.echo ok", "stub.echo denied", "hidden.echo denied"}; !slices.Equal(records, want) {
		t.Errorf("audit records %q, want %q", records, want)
	}
	if want := []string{"stub.get-sum ok", "stub.echo ok"}; !slices.Equal(counted, want) {
		t.Errorf("counted %q, want %q", counted, want)
	}
}
