//go:build remote && linux

package podman

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// memoryCgroupV1 is where the cgroup v1 memory controller is mounted.
const memoryCgroupV1 = "/sys/fs/cgroup/memory"

// An oomWatch observes a container's cgroup v1 memory controller from the
// host, through the kernel's OOM notifier (cgroup.event_control), and
// records whether the kernel ran the OOM killer in it.
//
// It exists because Podman with conmon on a host that mounts cgroup v1
// and v2 side by side does not report OOM kills (State.OOMKilled stays
// false). It works only when the engine runs on this machine as root.
type oomWatch struct {
	dir    string
	efd    int
	ofd    *os.File
	oom    atomic.Bool
	closed atomic.Bool
}

// watchOOM starts watching the memory cgroup at cgroupPath (as reported by
// the engine, relative to the controller's mount).
func watchOOM(cgroupPath string) (*oomWatch, error) {
	if cgroupPath == "" {
		return nil, errors.New("no cgroup path")
	}
	dir := filepath.Join(memoryCgroupV1, filepath.Clean("/"+cgroupPath))
	ofd, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		ofd.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	reg := strconv.Itoa(efd) + " " + strconv.Itoa(int(ofd.Fd()))
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(reg), 0); err != nil {
		unix.Close(efd)
		ofd.Close()
		return nil, fmt.Errorf("registering OOM notifier: %w", err)
	}
	w := &oomWatch{dir: dir, efd: efd, ofd: ofd}
	go w.loop()
	return w, nil
}

// loop waits for notifications. The kernel signals the eventfd when an
// OOM occurs in the cgroup (the cgroup still exists then) and when the
// cgroup is removed (its files are gone then).
func (w *oomWatch) loop() {
	defer func() {
		unix.Close(w.efd)
		w.ofd.Close()
	}()
	fds := []unix.PollFd{{Fd: int32(w.efd), Events: unix.POLLIN}}
	for !w.closed.Load() {
		n, err := unix.Poll(fds, 200)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 {
			continue
		}
		var buf [8]byte
		if _, err := unix.Read(w.efd, buf[:]); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(w.dir, "memory.oom_control")); err != nil {
			return // the cgroup was removed
		}
		w.oom.Store(true)
	}
}

// OOM reports whether an OOM kill was observed.
func (w *oomWatch) OOM() bool { return w.oom.Load() }

// Close stops watching; the watcher releases its descriptors within one
// poll interval. It does not wait, so a sandbox's exit is reported at once.
func (w *oomWatch) Close() { w.closed.Store(true) }
