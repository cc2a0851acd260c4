package engine

import (
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
)

// dockerConfig is the one place where a sandbox's Docker configuration is
// decided. It is pure: the same spec and owner give the same result.
func dockerConfig(spec Spec, owner Owner) (*container.Config, *container.HostConfig) {
	spec = spec.withDefaults()
	yes := true
	pids := spec.PidsLimit
	cfg := &container.Config{
		Image:           spec.Image,
		Cmd:             append([]string(nil), spec.Cmd...),
		User:            spec.User,
		Env:             append([]string(nil), SandboxEnv...),
		WorkingDir:      WorkspaceDir,
		Labels:          spec.labels(owner),
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
		Tmpfs: map[string]string{
			"/tmp":       tmpfsOptions(spec.TmpBytes),
			WorkspaceDir: tmpfsOptions(spec.WorkspaceBytes),
		},
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
				{Name: "nproc", Soft: int64(spec.NProc), Hard: int64(spec.NProc)},
			},
		},
	}
	return cfg, host
}

// tmpfsOptions returns the mount options of a sandbox tmpfs of size bytes.
func tmpfsOptions(size int64) string {
	return TmpfsOptions + ",size=" + strconv.FormatInt(size, 10) + ",mode=1777"
}
