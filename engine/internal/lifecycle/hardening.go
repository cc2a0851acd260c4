package lifecycle

import (
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// WorkspaceDir is the sandbox's working directory and HOME.
const WorkspaceDir = "/workspace"

// TmpfsFlags are the mount options of every writable mount but SiteDir.
const TmpfsFlags = "rw,noexec,nosuid,nodev"

// SiteFlags are the mount options of SiteDir: the code of installed
// packages runs from it (their extension modules are mapped executable).
const SiteFlags = "rw,exec,nosuid,nodev"

// Env returns the complete environment of every sandbox: nothing of
// the host's environment is passed in.
func Env() []string {
	return []string{
		"HOME=" + WorkspaceDir,
		"PYTHONUNBUFFERED=1",
		"PYTHONIOENCODING=utf-8",
		"PYTHONDONTWRITEBYTECODE=1",
	}
}

// Labels returns the labels of a container of s owned by o: its owner's
// and its session.
func Labels(s engine.Spec, o Owner) map[string]string {
	l := o.labels()
	l[engine.LabelSession] = s.Session
	if s.Resumable != "" {
		l[engine.LabelResumable] = s.Resumable
	}
	if s.SleepTTL > 0 {
		l[engine.LabelSleepTTL] = strconv.FormatInt(int64(s.SleepTTL/time.Second), 10)
	}
	return l
}

// TmpfsOptions returns the mount options of a sandbox tmpfs of size bytes
// and mode (octal), owned by user ("uid[:gid]") unless user is empty (then
// by root). Docker needs the owner: it resets the mode of the working
// directory's mount to 0755 when it prepares it. Podman keeps the mode and
// refuses uid= and gid=.
func TmpfsOptions(size int64, user, mode string) []string {
	return MountOptions(TmpfsFlags, size, user, mode)
}

// MountOptions returns flags (comma-separated) with the size, owner and
// mode options of tmpfsOptions.
func MountOptions(flags string, size int64, user, mode string) []string {
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
