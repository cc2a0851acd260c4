package config

import "golang.org/x/sys/unix"

// physicalMemory returns this machine's memory in bytes (sysctl
// hw.memsize), and whether it could tell.
func physicalMemory() (int64, bool) {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n == 0 {
		return 0, false
	}
	return int64(n), true
}
