//go:build remote && !linux

package podman

import "errors"

// memoryCgroupV1 is where Linux mounts the cgroup v1 memory controller;
// it does not exist here, so WatchMemory returns before watching.
const memoryCgroupV1 = "/sys/fs/cgroup/memory"

// An oomWatch is never started off Linux: there is no cgroup v1 memory
// controller of the engine's on this machine to watch (Podman on macOS
// runs in a virtual machine).
type oomWatch struct{}

// watchOOM refuses: see oomWatch.
func watchOOM(string) (*oomWatch, error) {
	return nil, errors.New("watching a cgroup's OOM kills needs Linux")
}

// OOM reports false: nothing was watched.
func (w *oomWatch) OOM() bool { return false }

// Close does nothing.
func (w *oomWatch) Close() {}
