//go:build remote

package podman

import (
	"maps"
	"testing"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/hardeningtest"
)

func TestPodmanSpec(t *testing.T) {
	u64 := func(n uint64) uint64 { return n }
	base := hardeningtest.FieldTable{
		"Spec.Image":   defaults.Image,
		"Spec.Command": []string{"python3", "-u", "-"},
		"Spec.User":    "65534:65534",
		"Spec.Env": map[string]string{
			"HOME": "/workspace", "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1",
		},
		"Spec.EnvHost":                 false,
		"Spec.HTTPProxy":               false,
		"Spec.WorkDir":                 "/workspace",
		"Spec.Labels":                  hardeningtest.Labels("s1"),
		"Spec.Stdin":                   true,
		"Spec.Terminal":                false,
		"Spec.Init":                    true,
		"Spec.NetNS.NSMode":            specgen.NoNetwork,
		"Spec.IpcNS.NSMode":            specgen.Private,
		"Spec.ReadOnlyFilesystem":      true,
		"Spec.ReadWriteTmpfs":          false,
		"Spec.Privileged":              false,
		"Spec.CapDrop":                 []string{"ALL"},
		"Spec.NoNewPrivileges":         true,
		"Spec.LogConfiguration.Driver": "none",
		"Spec.Mounts": []spec.Mount{
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=67108864", "mode=1777"}},
			{Destination: "/workspace", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=134217728", "mode=1777"}},
			{Destination: "/workspace/out", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=67108864", "mode=1777"}},
		},
		"Spec.ResourceLimits.Memory.Limit": int64(512 << 20),
		"Spec.ResourceLimits.Memory.Swap":  int64(512 << 20),
		"Spec.ResourceLimits.Pids.Limit":   int64(128),
		"Spec.Rlimits": []spec.POSIXRlimit{
			{Type: "nofile", Soft: u64(1024), Hard: u64(1024)},
			{Type: "nproc", Soft: u64(1024), Hard: u64(1024)},
		},
	}
	// hardeningtest.OperatorSpec asks for gVisor; hardeningtest.RuncSpec is the same under runc, where
	// the limits on tasks are the operator's as they are.
	operator := hardeningtest.FieldTable{
		"Spec.Image":                       "localhost/py:1",
		"Spec.Command":                     []string{"python3"},
		"Spec.User":                        "1000:1000",
		"Spec.Labels":                      hardeningtest.Labels("s2"),
		"Spec.OCIRuntime":                  "runsc",
		"Spec.ResourceLimits.Memory.Limit": int64(64 << 20),
		"Spec.ResourceLimits.Memory.Swap":  int64(64 << 20),
		"Spec.ResourceLimits.Pids.Limit":   int64(128 + 8*32),
		"Spec.ResourceLimits.CPU.Period":   uint64(100_000),
		"Spec.ResourceLimits.CPU.Quota":    int64(150_000),
		"Spec.Volumes":                     []*specgen.NamedVolume{{Name: "mcp-pkgs-0123", Dest: "/opt/mcp-packages", Options: []string{"nosuid", "nodev", "ro"}}},
		"Spec.Mounts": []spec.Mount{
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=1048576", "mode=1777"}},
			{Destination: "/workspace", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=2097152", "mode=1777"}},
			{Destination: "/workspace/out", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=3145728", "mode=1777"}},
			{Destination: "/workspace/in", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "noexec", "nosuid", "nodev", "size=4194304", "mode=0755"}},
			{Destination: "/opt/mcp-site", Type: "tmpfs", Source: "tmpfs", Options: []string{"rw", "exec", "nosuid", "nodev", "size=5242880", "mode=1777"}},
			{Destination: "/run/mcp-lane", Type: "bind", Source: "/run/mcp-bridge/lanes/0123", Options: []string{"bind", "ro", "nosuid", "nodev", "noexec", "rprivate"}},
		},
		"Spec.Rlimits": []spec.POSIXRlimit{
			{Type: "nofile", Soft: 256, Hard: 256},
			{Type: "nproc", Soft: 32, Hard: 32},
		},
	}
	runc := maps.Clone(operator)
	runc["Spec.OCIRuntime"] = "runc"
	runc["Spec.ResourceLimits.Pids.Limit"] = int64(32)
	runc["Spec.Rlimits"] = []spec.POSIXRlimit{{Type: "nofile", Soft: 256, Hard: 256}, {Type: "nproc", Soft: 64, Hard: 64}}
	tests := []struct {
		name string
		spec engine.Spec
		want hardeningtest.FieldTable
	}{
		{name: "defaults", spec: hardeningtest.DefaultSpec},
		{name: "operator values under gVisor", spec: hardeningtest.OperatorSpec, want: operator},
		{name: "operator values under runc", spec: hardeningtest.RuncSpec, want: runc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := maps.Clone(base)
			maps.Copy(want, tt.want)
			hardeningtest.CheckFields(t, want, map[string]any{"Spec": podmanSpec(tt.spec, hardeningtest.Owner())})
		})
	}
}

// defaults is the spec of zero values with its defaults applied.
var defaults = engine.Spec{}.WithDefaults()
