//go:build remote

package podman

import "syscall"

// serviceProcAttr starts the podman service in its own process group,
// and has the kernel stop it (SIGTERM) should the bridge die first.
func serviceProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
