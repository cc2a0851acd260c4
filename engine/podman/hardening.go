//go:build remote

package podman

import (
	"strings"

	"github.com/containers/podman/v5/pkg/specgen"
	spec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// podmanSpec is the one place where a sandbox's Podman configuration is
// decided. It is pure: the same spec and owner give the same result.
func podmanSpec(s engine.Spec, o lifecycle.Owner) *specgen.SpecGenerator {
	s = s.WithDefaults()
	yes, no := true, false
	mem := s.MemoryBytes
	pids, nproc := s.TaskLimits()
	env := map[string]string{}
	for _, kv := range lifecycle.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	res := &spec.LinuxResources{
		Memory: &spec.LinuxMemory{Limit: &mem, Swap: &mem},
		Pids:   &spec.LinuxPids{Limit: pids},
	}
	if s.NanoCPUs > 0 {
		period := uint64(100_000)
		quota := s.NanoCPUs * int64(period) / 1e9
		res.CPU = &spec.LinuxCPU{Period: &period, Quota: &quota}
	}
	tmpfs := func(dst string, size int64, mode string) spec.Mount {
		return spec.Mount{
			Destination: dst,
			Type:        "tmpfs",
			Source:      "tmpfs",
			Options:     lifecycle.TmpfsOptions(size, "", mode),
		}
	}
	// The file-exchange directories are plain tmpfs mounts: the service's
	// archive API joins the container's mount namespace, so it sees them.
	// They are nested in /workspace, so they come after it.
	mounts := []spec.Mount{
		tmpfs("/tmp", s.TmpBytes, "1777"),
		tmpfs(lifecycle.WorkspaceDir, s.WorkspaceBytes, "1777"),
		tmpfs(engine.OutDir, s.OutBytes, "1777"),
	}
	if s.InBytes > 0 {
		mounts = append(mounts, tmpfs(engine.InDir, s.InBytes, "0755"))
	}
	if s.SiteBytes > 0 {
		// Podman keeps the mode it is given and refuses uid= and gid=.
		mounts = append(mounts, spec.Mount{Destination: engine.SiteDir, Type: "tmpfs", Source: "tmpfs",
			Options: lifecycle.MountOptions(lifecycle.SiteFlags, s.SiteBytes, "", "1777")})
	}
	// The fast lane's directory: one socket, read-only, nothing to run.
	if s.Lane != "" {
		mounts = append(mounts, spec.Mount{Destination: engine.LaneDir, Type: "bind", Source: s.Lane,
			Options: []string{"bind", "ro", "nosuid", "nodev", "noexec", "rprivate"}})
	}
	// Named volumes (package sets): nosuid and nodev, never noexec.
	var volumes []*specgen.NamedVolume
	for _, v := range s.Volumes {
		opts := []string{"nosuid", "nodev"}
		if v.ReadOnly {
			opts = append(opts, "ro")
		}
		volumes = append(volumes, &specgen.NamedVolume{Name: v.Name, Dest: v.Target, Options: opts})
	}
	g := &specgen.SpecGenerator{}
	g.Image = s.Image
	g.Command = append([]string(nil), s.Cmd...)
	g.User = s.User
	g.Env = env
	g.EnvHost = &no
	g.HTTPProxy = &no
	g.WorkDir = lifecycle.WorkspaceDir
	g.Labels = lifecycle.Labels(s, o)
	g.Stdin = &yes
	g.Terminal = &no
	g.Init = &yes
	g.OCIRuntime = s.OCIRuntime
	g.NetNS = specgen.Namespace{NSMode: specgen.NoNetwork}
	g.IpcNS = specgen.Namespace{NSMode: specgen.Private}
	g.ReadOnlyFilesystem = &yes
	g.ReadWriteTmpfs = &no
	g.Privileged = &no
	g.CapDrop = []string{"ALL"}
	g.NoNewPrivileges = &yes
	g.Mounts = mounts
	g.Volumes = volumes
	// Output is read through the attached streams only; the engine keeps
	// no log of it, so a flood cannot fill the engine's disk.
	g.LogConfiguration = &specgen.LogConfig{Driver: "none"}
	g.ResourceLimits = res
	g.Rlimits = []spec.POSIXRlimit{
		{Type: "nofile", Soft: s.NoFile, Hard: s.NoFile},
		{Type: "nproc", Soft: nproc, Hard: nproc},
	}
	return g
}
