package lifecycle

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An Owner identifies a bridge process: the labels it puts on its
// containers and the test for whether it still runs.
type Owner struct {
	Host  string
	PID   int
	Start string
	// PIDNS is the process's PID namespace (LabelPIDNS); "" when unknown.
	PIDNS string
	// Pod, when set, is the pod the bridge runs in: it, not the host and
	// process, owns the containers (see owner_pod.go).
	Pod engine.PodRef
}

// CurrentOwner returns the owner of the current process.
func CurrentOwner() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return Owner{Host: host, PID: pid, Start: processStart(pid), PIDNS: pidNamespace()}
}

func (o Owner) labels() map[string]string {
	l := map[string]string{
		engine.LabelBridge:   "1",
		engine.LabelHost:     o.Host,
		engine.LabelPID:      strconv.Itoa(o.PID),
		engine.LabelPIDStart: o.Start,
	}
	if o.PIDNS != "" {
		l[engine.LabelPIDNS] = o.PIDNS
	}
	labelPod(o.Pod, l)
	return l
}

// orphaned reports whether a container with labels was created by a bridge
// process of this host that no longer runs, or, for a bridge that runs in
// a pod, by a bridge pod that is gone (podGone; nil: never). Containers of
// other hosts (a shared remote engine) and of live processes are never
// orphans; nor are a pod's containers to a process, or a process's to a
// pod: neither can tell whether the other still runs.
func (o Owner) orphaned(labels map[string]string, alive func(pid int, start string) bool, podGone func(engine.PodRef) bool) bool {
	if labels[engine.LabelBridge] != "1" {
		return false
	}
	if p, ok := podOf(labels); ok || o.Pod != (engine.PodRef{}) {
		return ok && o.Pod != (engine.PodRef{}) && p != o.Pod && podGone != nil && podGone(p)
	}
	if labels[engine.LabelHost] != o.Host {
		return false
	}
	// A process of another PID namespace (a bridge in a container given
	// the host's name, as --network host does) is not ours to look up.
	if ns := labels[engine.LabelPIDNS]; ns != "" && ns != o.PIDNS {
		return false
	}
	pid, err := strconv.Atoi(labels[engine.LabelPID])
	if err != nil || pid <= 0 {
		return true
	}
	if pid == o.PID && labels[engine.LabelPIDStart] == o.Start {
		return false
	}
	return !alive(pid, labels[engine.LabelPIDStart])
}

// processAlive reports whether process pid runs and started at start (as
// recorded by processStart); an empty start matches any start time.
func processAlive(pid int, start string) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return start == "" || processStart(pid) == start
}

// pidNamespace returns the inode number of this process's PID namespace,
// or "" when it cannot be read.
func pidNamespace() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	// "pid:[4026531836]"
	l = strings.TrimPrefix(l, "pid:[")
	l = strings.TrimSuffix(l, "]")
	if _, err := strconv.ParseUint(l, 10, 64); err != nil {
		return ""
	}
	return l
}

// processStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/pid/stat), or "" when it cannot be read.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// OwnerLabels returns the labels that name o as a container's owner.
func OwnerLabels(o Owner) map[string]string { return o.labels() }
