package docker

import (
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// dockerConfig is the one place where a sandbox's Docker configuration is
// decided. It is pure: the same spec and owner give the same result.
func dockerConfig(spec engine.Spec, o lifecycle.Owner) (*container.Config, *container.HostConfig) {
	spec = spec.WithDefaults()
	yes := true
	pids, nproc := spec.TaskLimits()
	// The file-exchange directories are tmpfs-backed anonymous volumes,
	// not tmpfs mounts: the daemon's archive API (docker cp), through
	// which the host reads and writes them, does not see tmpfs mounts.
	// They are labelled as the container is, so that orphan clean-up
	// finds them, and removed with it. Under gVisor they reach the
	// sandbox through its gofer, without their mount flags: the Sentry
	// runs scripts from them (it cannot map their binaries executable).
	volume := func(dst string, size int64, user, mode string) mount.Mount {
		return mount.Mount{
			Type:   mount.TypeVolume,
			Target: dst,
			VolumeOptions: &mount.VolumeOptions{
				NoCopy: true,
				Labels: lifecycle.Labels(spec, o),
				DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
					"type":   "tmpfs",
					"device": "tmpfs",
					"o":      strings.Join(lifecycle.TmpfsOptions(size, user, mode), ","),
				}},
			},
		}
	}
	// Nested in /workspace: the daemon mounts them after it, as it sorts
	// all mounts by depth.
	// A sandbox that may sleep (SleepTTL) has its files out in a tmpfs of
	// its own instead (below), which a checkpoint holds.
	var mounts []mount.Mount
	if spec.SleepTTL == 0 {
		mounts = append(mounts, volume(engine.OutDir, spec.OutBytes, spec.User, "0700"))
	}
	if spec.InBytes > 0 {
		mounts = append(mounts, volume(engine.InDir, spec.InBytes, "", "0755"))
	}
	// Named volumes (package sets): never filled from the image, never
	// noexec; Docker's volume mounts take no nosuid or nodev, which
	// no-new-privileges and the dropped capabilities make moot.
	for _, v := range spec.Volumes {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: v.Name, Target: v.Target, ReadOnly: v.ReadOnly,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	// The fast lane's directory: Docker takes no nosuid, nodev or noexec
	// on a bind mount, only readonly; it holds one socket, which
	// no-new-privileges and the dropped capabilities leave nothing to
	// gain from. A mount (never a bind of -v, which makes a missing
	// source) fails when the engine's host has no such directory.
	if spec.Lane != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: spec.Lane, Target: engine.LaneDir, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate, NonRecursive: true}})
	}
	tmpfs := map[string]string{
		"/tmp":                 strings.Join(lifecycle.TmpfsOptions(spec.TmpBytes, spec.User, "1777"), ","),
		lifecycle.WorkspaceDir: strings.Join(lifecycle.TmpfsOptions(spec.WorkspaceBytes, spec.User, "1777"), ","),
	}
	if spec.SiteBytes > 0 {
		tmpfs[engine.SiteDir] = strings.Join(siteOptions(spec.SiteBytes, spec.User), ",")
	}
	if spec.SleepTTL > 0 {
		// A stopped container's tmpfs volume is emptied, and gVisor's
		// restore fails on the files it misses: a tmpfs of the sandbox's
		// own is in the checkpoint. Its files pass through the
		// sandbox's exec (filesInside), the daemon's archive calls do
		// not see it.
		tmpfs[engine.OutDir] = strings.Join(lifecycle.TmpfsOptions(spec.OutBytes, spec.User, "0700"), ",")
	}
	cfg := &container.Config{
		Image:           spec.Image,
		Cmd:             append([]string(nil), spec.Cmd...),
		User:            spec.User,
		Env:             lifecycle.Env(),
		WorkingDir:      lifecycle.WorkspaceDir,
		Labels:          lifecycle.Labels(spec, o),
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
		Tty:             false,
		NetworkDisabled: true,
		StopSignal:      "SIGTERM",
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Privileged:     false,
		IpcMode:        container.IPCModePrivate,
		Init:           &yes,
		Runtime:        spec.OCIRuntime,
		Tmpfs:          tmpfs,
		Mounts:         mounts,
		// Output is read through the attached streams only; the daemon
		// keeps no log of it, so a flood cannot fill the engine's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     spec.MemoryBytes,
			MemorySwap: spec.MemoryBytes,
			PidsLimit:  &pids,
			NanoCPUs:   spec.NanoCPUs,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: int64(spec.NoFile), Hard: int64(spec.NoFile)},
				{Name: "nproc", Soft: int64(nproc), Hard: int64(nproc)},
			},
		},
	}
	return cfg, host
}

// siteOptions returns the mount options of the SiteDir tmpfs of size
// bytes, owned by user: tmpfsOptions', but exec.
func siteOptions(size int64, user string) []string {
	return lifecycle.MountOptions(lifecycle.SiteFlags, size, user, "0755")
}
