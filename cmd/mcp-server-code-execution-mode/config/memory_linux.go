package config

import "golang.org/x/sys/unix"

// physicalMemory returns this machine's memory in bytes, and whether it
// could tell.
func physicalMemory() (int64, bool) {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0, false
	}
	return int64(si.Totalram) * int64(si.Unit), true
}
