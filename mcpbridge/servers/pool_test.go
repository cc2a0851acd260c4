package servers

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

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
