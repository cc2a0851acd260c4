package engine

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Labels on every container the bridge creates.
const (
	// LabelBridge marks a container as the bridge's; its value is "1".
	LabelBridge = "io.github.mcp-server-code-execution-mode"
	// LabelHost is the host name of the bridge process that owns it.
	LabelHost = LabelBridge + ".host"
	// LabelPID is the owning bridge process's PID.
	LabelPID = LabelBridge + ".pid"
	// LabelPIDStart is the owning process's start time in clock ticks since
	// boot, so that a reused PID is not mistaken for the owner.
	LabelPIDStart = LabelBridge + ".pid-start"
	// LabelSession is the client session the container serves.
	LabelSession = LabelBridge + ".session"
	// LabelPIDNS is the inode number of the owning process's PID
	// namespace: a process of another namespace (a bridge in a container
	// that shares the host's name) cannot be looked up by its PID.
	LabelPIDNS = LabelBridge + ".pid-ns"
	// LabelResumable marks a container other bridges may resume; its
	// value is the fingerprint of their shared handle key.
	LabelResumable = LabelBridge + ".resumable"
)

// An owner identifies a bridge process: the labels it puts on its
// containers and the test for whether it still runs.
type owner struct {
	Host  string
	PID   int
	Start string
	// PIDNS is the process's PID namespace (LabelPIDNS); "" when unknown.
	PIDNS string
	// Pod, when set, is the pod the bridge runs in: it, not the host and
	// process, owns the containers (see owner_pod.go).
	Pod PodRef
}

// currentOwner returns the owner of the current process.
func currentOwner() owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return owner{Host: host, PID: pid, Start: processStart(pid), PIDNS: pidNamespace()}
}

func (o owner) labels() map[string]string {
	l := map[string]string{
		LabelBridge:   "1",
		LabelHost:     o.Host,
		LabelPID:      strconv.Itoa(o.PID),
		LabelPIDStart: o.Start,
	}
	if o.PIDNS != "" {
		l[LabelPIDNS] = o.PIDNS
	}
	o.Pod.label(l)
	return l
}

// orphaned reports whether a container with labels was created by a bridge
// process of this host that no longer runs, or, for a bridge that runs in
// a pod, by a bridge pod that is gone (podGone; nil: never). Containers of
// other hosts (a shared remote engine) and of live processes are never
// orphans; nor are a pod's containers to a process, or a process's to a
// pod: neither can tell whether the other still runs.
func (o owner) orphaned(labels map[string]string, alive func(pid int, start string) bool, podGone func(PodRef) bool) bool {
	if labels[LabelBridge] != "1" {
		return false
	}
	if p, ok := podOf(labels); ok || o.Pod != (PodRef{}) {
		return ok && o.Pod != (PodRef{}) && p != o.Pod && podGone != nil && podGone(p)
	}
	if labels[LabelHost] != o.Host {
		return false
	}
	// A process of another PID namespace (a bridge in a container given
	// the host's name, as --network host does) is not ours to look up.
	if ns := labels[LabelPIDNS]; ns != "" && ns != o.PIDNS {
		return false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if err != nil || pid <= 0 {
		return true
	}
	if pid == o.PID && labels[LabelPIDStart] == o.Start {
		return false
	}
	return !alive(pid, labels[LabelPIDStart])
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
