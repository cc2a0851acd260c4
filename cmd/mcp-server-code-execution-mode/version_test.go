package main

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "dev"},
		{"go install @v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3"},
		{"go build in a checkout (pseudo-version)", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126141911-bafaf49abcde+dirty"}}, true,
			"v0.0.0-20261126141911-bafaf49abcde+dirty"},
		{"devel with a revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "bafaf49abcdef0123456789", "vcs.modified", "false")}, true, "bafaf49abcde"},
		{"devel with a dirty tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "bafaf49abcdef0123456789", "vcs.modified", "true")}, true, "bafaf49abcde+dirty"},
		{"devel without VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
	}
	for _, tt := range tests {
		if got := buildVersion(tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDoctorNamesTheVersion(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	r := settingsResult(cfg, time.Now())
	if r.BridgeVersion != version || version == "" || !strings.HasPrefix(r.Detail, "mcp-server-code-execution-mode "+version+";") {
		t.Fatalf("settings check: version %q, detail %q; want %q", r.BridgeVersion, r.Detail, version)
	}
}
