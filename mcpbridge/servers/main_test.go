package servers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/stubserver"
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
