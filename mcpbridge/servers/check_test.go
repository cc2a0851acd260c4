package servers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

func TestCheck(t *testing.T) {
	home := t.TempDir()
	self, _ := os.Executable()
	write(t, filepath.Join(home, "MCPs", "servers.json"), `{"mcpServers": {
		"stub": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1"}},
		"broken": {"command": "sh", "args": ["-c", "echo starting >&2; echo 'cannot find module x' >&2; exit 3"]},
		"silent": {"command": "sleep", "args": ["30"]},
		"missing": {"command": "/nonexistent/server"}
	}}`)
	r := discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})
	began := time.Now()
	got := Check(context.Background(), r, &CheckOptions{Timeout: time.Second, Concurrency: 2})
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("checking took %v", took)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Server)
	}
	if !slices.Equal(names, []string{"broken", "missing", "silent", "stub"}) {
		t.Fatalf("servers %v", names)
	}
	broken, missing, silent, stub := got[0], got[1], got[2], got[3]
	if stub.Err != nil || stub.Tools < 3 || stub.Took <= 0 {
		t.Errorf("stub: %+v", stub)
	}
	if broken.Err == nil || broken.Stderr != "starting | cannot find module x" ||
		broken.Command != `sh -c 'echo starting >&2; echo '\''cannot find module x'\'' >&2; exit 3'` {
		t.Errorf("broken: %+v", broken)
	}
	if missing.Err == nil || !strings.Contains(missing.Err.Error(), "/nonexistent/server") {
		t.Errorf("missing: %+v", missing)
	}
	if silent.Err == nil || !strings.Contains(silent.Err.Error(), "no tool list within 1s") {
		t.Errorf("silent: %+v", silent)
	}
}
