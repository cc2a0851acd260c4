//go:build remote && !linux

package podman

import "syscall"

// serviceProcAttr starts the podman service in its own process group.
// Off Linux the kernel has no parent-death signal; there (macOS) the
// podman CLI is a client of its virtual machine's service and the bridge
// connects to that one instead of starting its own.
func serviceProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
