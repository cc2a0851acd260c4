package mcpbridge

import (
	"os"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/stubserver"
)

// The environment of the stub server (internal/stubserver), which the
// test binary serves on stdio instead of running tests, so that the
// bridge proxies a real process.
const (
	stubServerEnv     = stubserver.ServerEnv
	stubStartDelayEnv = stubserver.StartDelayEnv
	stubSlowEnv       = stubserver.SlowEnv
)

func TestMain(m *testing.M) {
	stubserver.Main()
	os.Exit(m.Run())
}
