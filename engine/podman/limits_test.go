//go:build remote

package podman

import (
	"strings"
	"testing"

	"github.com/containers/podman/v5/libpod/define"
)

// TestWeakLimits: a rootful service applies the limits; a rootless one
// on cgroup v1 applies none; on cgroup v2 it needs the memory, pids and
// cpu controllers delegated, and names those it lacks.
func TestWeakLimits(t *testing.T) {
	host := func(rootless bool, version string, controllers ...string) *define.HostInfo {
		return &define.HostInfo{CgroupsVersion: version, CgroupControllers: controllers, Security: define.SecurityInfo{Rootless: rootless}}
	}
	for _, tt := range []struct {
		name string
		host *define.HostInfo
		want string // "" or a part of the reason
	}{
		{"no host info", nil, ""},
		{"rootful on cgroup v1", host(false, "v1"), ""},
		{"rootful on cgroup v2", host(false, "v2", "cpu"), ""},
		{"rootless on cgroup v1", host(true, "v1", "memory", "pids", "cpu"), "rootless Podman on cgroup v1 ignores memory, pids and CPU limits"},
		{"rootless on cgroup v2, all delegated", host(true, "v2", "cpuset", "cpu", "io", "memory", "pids"), ""},
		{"rootless on cgroup v2, systemd's default delegation", host(true, "v2", "memory", "pids"), "no cpu cgroup controller delegated"},
		{"rootless on cgroup v2, none delegated", host(true, "v2"), "no memory, pids, cpu cgroup controller"},
	} {
		got := weakLimits(tt.host)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
