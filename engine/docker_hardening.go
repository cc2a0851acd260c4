package engine

import (
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"
)

// dockerConfig is the one place where a sandbox's Docker configuration is
// decided. It is pure: the same spec and owner give the same result.
func dockerConfig(spec Spec, o owner) (*container.Config, *container.HostConfig) {
	spec = spec.withDefaults()
	yes := true
	pids, nproc := spec.taskLimits()
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
				Labels: spec.labels(o),
				DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
					"type":   "tmpfs",
					"device": "tmpfs",
					"o":      strings.Join(tmpfsOptions(size, user, mode), ","),
				}},
			},
		}
	}
	// Nested in /workspace: the daemon mounts them after it, as it sorts
	// all mounts by depth.
	mounts := []mount.Mount{volume(OutDir, spec.OutBytes, spec.User, "0700")}
	if spec.InBytes > 0 {
		mounts = append(mounts, volume(InDir, spec.InBytes, "", "0755"))
	}
	// Named volumes (package sets): never filled from the image, never
	// noexec; Docker's volume mounts take no nosuid or nodev, which
	// no-new-privileges and the dropped capabilities make moot.
	for _, v := range spec.Volumes {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: v.Name, Target: v.Target, ReadOnly: v.ReadOnly,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	tmpfs := map[string]string{
		"/tmp":       strings.Join(tmpfsOptions(spec.TmpBytes, spec.User, "1777"), ","),
		workspaceDir: strings.Join(tmpfsOptions(spec.WorkspaceBytes, spec.User, "1777"), ","),
	}
	if spec.SiteBytes > 0 {
		tmpfs[SiteDir] = strings.Join(siteOptions(spec.SiteBytes, spec.User), ",")
	}
	cfg := &container.Config{
		Image:           spec.Image,
		Cmd:             append([]string(nil), spec.Cmd...),
		User:            spec.User,
		Env:             sandboxEnv(),
		WorkingDir:      workspaceDir,
		Labels:          spec.labels(o),
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
	return mountOptions(siteFlags, size, user, "0755")
}

// tmpfsOptions returns the mount options of a sandbox tmpfs of size bytes
// and mode (octal), owned by user ("uid[:gid]") unless user is empty (then
// by root). Docker needs the owner: it resets the mode of the working
// directory's mount to 0755 when it prepares it. Podman keeps the mode and
// refuses uid= and gid=.
func tmpfsOptions(size int64, user, mode string) []string {
	return mountOptions(tmpfsFlags, size, user, mode)
}

// mountOptions returns flags (comma-separated) with the size, owner and
// mode options of tmpfsOptions.
func mountOptions(flags string, size int64, user, mode string) []string {
	opts := append(strings.Split(flags, ","), "size="+strconv.FormatInt(size, 10))
	if user != "" {
		uid, gid, ok := strings.Cut(user, ":")
		if !ok {
			gid = uid
		}
		opts = append(opts, "uid="+uid, "gid="+gid)
	}
	return append(opts, "mode="+mode)
}
