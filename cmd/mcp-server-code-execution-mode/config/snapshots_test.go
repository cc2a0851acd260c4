package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLoadSnapshots: MCP_BRIDGE_SNAPSHOTS turns sleeping sessions and
// forks on with their bounds, only with gVisor and without the fast lane.
func TestLoadSnapshots(t *testing.T) {
	c, err := Load(envOf(map[string]string{EnvSnapshots: "1", EnvOCIRuntime: "runsc", EnvSnapshotMax: "2g",
		EnvSnapshotTTL: "3600", EnvMaxForks: "3"}))
	if err != nil {
		t.Fatal(err)
	}
	b := c.Bridge
	if b.Session.Sleep == nil || b.Session.Sleep.MaxBytes != 2<<30 || b.Session.Spec.SleepTTL != time.Hour || b.MaxForks != 3 {
		t.Fatalf("snapshots on: sleep %+v, ttl %v, forks %d", b.Session.Sleep, b.Session.Spec.SleepTTL, b.MaxForks)
	}
	c, err = Load(envOf(map[string]string{EnvSnapshots: "1", EnvOCIRuntime: "runsc"}))
	if err != nil || c.Bridge.Session.Spec.SleepTTL != defaultSnapshotTTL || c.Bridge.MaxForks != defaultMaxForks || c.Bridge.Session.Sleep.MaxBytes != 0 {
		t.Fatalf("defaults: %v %+v", err, c.Bridge)
	}
	c, err = Load(envOf(map[string]string{EnvOCIRuntime: "runsc", EnvMaxForks: "3"}))
	if err != nil || c.Bridge.Session.Sleep != nil || c.Bridge.Session.Spec.SleepTTL != 0 {
		t.Fatalf("off by default: %v %+v", err, c.Bridge.Session)
	}
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvSnapshots: "1"}, "needs gVisor"},
		{map[string]string{EnvSnapshots: "1", EnvOCIRuntime: "runc"}, "set MCP_BRIDGE_OCI_RUNTIME=runsc"},
		{map[string]string{EnvSnapshots: "1", EnvOCIRuntime: "runsc", EnvFastLane: "1"}, "both set"},
		{map[string]string{EnvSnapshots: "maybe"}, "MCP_BRIDGE_SNAPSHOTS"},
		{map[string]string{EnvSnapshots: "1", EnvOCIRuntime: "runsc", EnvInputDir: "/"}, "MCP_BRIDGE_INPUT_DIR are both set"},
		{map[string]string{EnvMaxForks: "17"}, "from 1 to 16"},
		{map[string]string{EnvSnapshotTTL: "5"}, "from 60"},
		{map[string]string{EnvSnapshotMax: "1k"}, "at least 1m"},
	} {
		_, err := Load(envOf(tt.env))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.env, err, tt.want)
		}
	}
}
