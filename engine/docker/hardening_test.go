package docker

import (
	"maps"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/strslice"
	"github.com/docker/go-units"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/hardeningtest"
)

// wantVolume is a file-exchange volume of the Docker tables.
func wantVolume(dst, session, opts string) mount.Mount {
	return mount.Mount{
		Type:   mount.TypeVolume,
		Target: dst,
		VolumeOptions: &mount.VolumeOptions{
			NoCopy: true,
			Labels: hardeningtest.Labels(session),
			DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
				"type": "tmpfs", "device": "tmpfs", "o": opts,
			}},
		},
	}
}

func TestDockerConfig(t *testing.T) {
	// hardeningtest.OperatorSpec asks for gVisor; hardeningtest.RuncSpec is the same under runc, where
	// the limits on tasks are the operator's as they are.
	operator := hardeningtest.FieldTable{
		"Config.Image":          "localhost/py:1",
		"Config.Cmd":            strslice.StrSlice{"python3"},
		"Config.User":           "1000:1000",
		"HostConfig.Memory":     int64(64 << 20),
		"HostConfig.MemorySwap": int64(64 << 20),
		"HostConfig.PidsLimit":  int64(128 + 8*32),
		"HostConfig.NanoCPUs":   int64(1_500_000_000),
		"HostConfig.Runtime":    "runsc",
		"HostConfig.Tmpfs": map[string]string{"/tmp": "rw,noexec,nosuid,nodev,size=1048576,uid=1000,gid=1000,mode=1777", "/workspace": "rw,noexec,nosuid,nodev,size=2097152,uid=1000,gid=1000,mode=1777",
			"/opt/mcp-site": "rw,exec,nosuid,nodev,size=5242880,uid=1000,gid=1000,mode=0755"},
		"Config.Labels":      hardeningtest.Labels("s2"),
		"HostConfig.Ulimits": []*units.Ulimit{{Name: "nofile", Soft: 256, Hard: 256}, {Name: "nproc", Soft: 32, Hard: 32}},
		"HostConfig.Mounts": []mount.Mount{
			wantVolume("/workspace/out", "s2", "rw,noexec,nosuid,nodev,size=3145728,uid=1000,gid=1000,mode=0700"),
			wantVolume("/workspace/in", "s2", "rw,noexec,nosuid,nodev,size=4194304,mode=0755"),
			{Type: mount.TypeVolume, Source: "mcp-pkgs-0123", Target: "/opt/mcp-packages", ReadOnly: true, VolumeOptions: &mount.VolumeOptions{NoCopy: true}},
			{Type: mount.TypeBind, Source: "/run/mcp-bridge/lanes/0123", Target: "/run/mcp-lane", ReadOnly: true,
				BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate, NonRecursive: true}},
		},
	}
	// A sandbox that may sleep has its files out in a tmpfs of its own,
	// which a checkpoint holds, and no volume.
	sleepy := hardeningtest.DefaultSpec
	sleepy.SleepTTL = time.Hour
	sleepyLabels := hardeningtest.Labels("s1")
	sleepyLabels[engine.LabelSleepTTL] = "3600"
	runc := maps.Clone(operator)
	runc["HostConfig.PidsLimit"] = int64(32)
	runc["HostConfig.Runtime"] = "runc"
	runc["HostConfig.Ulimits"] = []*units.Ulimit{{Name: "nofile", Soft: 256, Hard: 256}, {Name: "nproc", Soft: 64, Hard: 64}}
	tests := []struct {
		name string
		spec engine.Spec
		want hardeningtest.FieldTable
	}{
		{name: "defaults", spec: hardeningtest.DefaultSpec},
		{name: "operator values under gVisor", spec: hardeningtest.OperatorSpec, want: operator},
		{name: "operator values under runc", spec: hardeningtest.RuncSpec, want: runc},
		{name: "a sandbox that may sleep", spec: sleepy, want: hardeningtest.FieldTable{
			"Config.Labels": sleepyLabels,
			"HostConfig.Tmpfs": map[string]string{
				"/tmp":           "rw,noexec,nosuid,nodev,size=67108864,uid=65534,gid=65534,mode=1777",
				"/workspace":     "rw,noexec,nosuid,nodev,size=134217728,uid=65534,gid=65534,mode=1777",
				"/workspace/out": "rw,noexec,nosuid,nodev,size=67108864,uid=65534,gid=65534,mode=0700",
			},
			"HostConfig.Mounts": nil, // none
		}},
	}
	base := hardeningtest.FieldTable{
		"Config.Image":              defaults.Image,
		"Config.Cmd":                strslice.StrSlice{"python3", "-u", "-"},
		"Config.User":               "65534:65534",
		"Config.Env":                []string{"HOME=/workspace", "PYTHONUNBUFFERED=1", "PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1"},
		"Config.WorkingDir":         "/workspace",
		"Config.Labels":             hardeningtest.Labels("s1"),
		"Config.AttachStdin":        true,
		"Config.AttachStdout":       true,
		"Config.AttachStderr":       true,
		"Config.OpenStdin":          true,
		"Config.StdinOnce":          true,
		"Config.NetworkDisabled":    true,
		"Config.StopSignal":         "SIGTERM",
		"HostConfig.NetworkMode":    container.NetworkMode("none"),
		"HostConfig.ReadonlyRootfs": true,
		"HostConfig.CapDrop":        strslice.StrSlice{"ALL"},
		"HostConfig.SecurityOpt":    []string{"no-new-privileges"},
		"HostConfig.IpcMode":        container.IPCModePrivate,
		"HostConfig.Init":           true,
		"HostConfig.Tmpfs": map[string]string{
			"/tmp":       "rw,noexec,nosuid,nodev,size=67108864,uid=65534,gid=65534,mode=1777",
			"/workspace": "rw,noexec,nosuid,nodev,size=134217728,uid=65534,gid=65534,mode=1777",
		},
		"HostConfig.Mounts": []mount.Mount{
			wantVolume("/workspace/out", "s1", "rw,noexec,nosuid,nodev,size=67108864,uid=65534,gid=65534,mode=0700"),
		},
		"HostConfig.LogConfig.Type": "none",
		"HostConfig.Memory":         int64(512 << 20),
		"HostConfig.MemorySwap":     int64(512 << 20),
		"HostConfig.PidsLimit":      int64(128),
		"HostConfig.Ulimits":        []*units.Ulimit{{Name: "nofile", Soft: 1024, Hard: 1024}, {Name: "nproc", Soft: 1024, Hard: 1024}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := maps.Clone(base)
			maps.Copy(want, tt.want)
			maps.DeleteFunc(want, func(_ string, v any) bool { return v == nil })
			cfg, host := dockerConfig(tt.spec, hardeningtest.Owner())
			hardeningtest.CheckFields(t, want, map[string]any{"Config": cfg, "HostConfig": host})
		})
	}
}

func TestDockerConfigDoesNotAliasSpec(t *testing.T) {
	spec := engine.Spec{Cmd: []string{"a"}}
	cfg, _ := dockerConfig(spec, hardeningtest.Owner())
	cfg.Cmd[0] = "b"
	if spec.Cmd[0] != "a" {
		t.Fatal("dockerConfig shares the command slice with its input")
	}
}
