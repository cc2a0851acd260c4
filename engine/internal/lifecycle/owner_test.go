package lifecycle

import (
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"testing"
)

func TestOwnerOrphaned(t *testing.T) {
	me := Owner{Host: "h", PID: 10, Start: "100", PIDNS: "111"}
	alive := func(pid int, start string) bool { return pid == 20 && start == "200" }
	tests := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "10", engine.LabelPIDStart: "100"}, false}, // mine
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "20", engine.LabelPIDStart: "200"}, false}, // live peer
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "20", engine.LabelPIDStart: "201"}, true},  // pid reused
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "30", engine.LabelPIDStart: "300"}, true},  // dead
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "10", engine.LabelPIDStart: "99"}, true},   // my pid, earlier process
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "other", engine.LabelPID: "30"}, false},                          // another host's
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "junk"}, true},
		{map[string]string{engine.LabelHost: "h", engine.LabelPID: "30"}, false}, // not ours
		// A process of another PID namespace is not looked up.
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "30", engine.LabelPIDNS: "999"}, false},
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "30", engine.LabelPIDNS: "111"}, true},
		// A pod's containers are never a process's orphans.
		{map[string]string{engine.LabelBridge: "1", engine.LabelHost: "h", engine.LabelPID: "30", engine.LabelPodNamespace: "b", engine.LabelPodName: "p", engine.LabelPodUID: "u"}, false},
	}
	for i, tt := range tests {
		if got := me.orphaned(tt.labels, alive, nil); got != tt.want {
			t.Errorf("case %d %v: orphaned = %v, want %v", i, tt.labels, got, tt.want)
		}
	}
}

func TestOwnerOrphanedInPod(t *testing.T) {
	me := Owner{Host: "node", PID: 1, Start: "5", Pod: engine.PodRef{Namespace: "bridge", Name: "bridge-0", UID: "uid-0"}}
	pod := func(ns, name, uid string) map[string]string {
		return map[string]string{engine.LabelBridge: "1", engine.LabelHost: "node", engine.LabelPID: "1", engine.LabelPIDStart: "5",
			engine.LabelPodNamespace: ns, engine.LabelPodName: name, engine.LabelPodUID: uid}
	}
	// bridge-1 runs; bridge-0's earlier pod (uid-old) and bridge-2 are gone.
	running := map[engine.PodRef]bool{{Namespace: "bridge", Name: "bridge-0", UID: "uid-0"}: true, {Namespace: "bridge", Name: "bridge-1", UID: "uid-1"}: true}
	asked := map[engine.PodRef]int{}
	gone := func(p engine.PodRef) bool { asked[p]++; return !running[p] }
	tests := []struct {
		name   string
		labels map[string]string
		gone   func(engine.PodRef) bool
		want   bool
	}{
		{"mine", pod("bridge", "bridge-0", "uid-0"), gone, false},
		{"a running replica's, same node and PID 1", pod("bridge", "bridge-1", "uid-1"), gone, false},
		{"my name's earlier pod", pod("bridge", "bridge-0", "uid-old"), gone, true},
		{"a deleted replica's", pod("bridge", "bridge-2", "uid-2"), gone, true},
		{"a deleted replica's, pods not looked up", pod("bridge", "bridge-2", "uid-2"), nil, false},
		{"a host process's, same host name and PID", map[string]string{engine.LabelBridge: "1", engine.LabelHost: "node", engine.LabelPID: "1", engine.LabelPIDStart: "4"}, gone, false},
		{"not a bridge's", map[string]string{engine.LabelPodNamespace: "bridge", engine.LabelPodName: "bridge-2", engine.LabelPodUID: "uid-2"}, gone, false},
	}
	for _, tt := range tests {
		if got := me.orphaned(tt.labels, func(int, string) bool { return false }, tt.gone); got != tt.want {
			t.Errorf("%s: orphaned = %v, want %v", tt.name, got, tt.want)
		}
	}
	if asked[me.Pod] != 0 {
		t.Errorf("the bridge looked up its own pod %d times", asked[me.Pod])
	}
}

func TestPodOwnerLabels(t *testing.T) {
	o := Owner{Host: "node", PID: 1, Start: "5", Pod: engine.PodRef{Namespace: "bridge", Name: "bridge-0", UID: "uid-0"}}
	l := Labels(engine.Spec{Session: "s"}, o)
	if p, ok := podOf(l); !ok || p != o.Pod {
		t.Fatalf("labels %v name pod %v (%v), want %v", l, p, ok, o.Pod)
	}
	if _, ok := podOf(Labels(engine.Spec{}, Owner{Host: "h", PID: 2})); ok {
		t.Fatal("a process's labels name a pod")
	}
}

func TestProcessAlive(t *testing.T) {
	self := CurrentOwner()
	if self.Start == "" {
		t.Fatal("cannot read own start time")
	}
	if !processAlive(self.PID, self.Start) {
		t.Fatal("own process reported dead")
	}
	if processAlive(self.PID, self.Start+"1") {
		t.Fatal("own PID with another start time reported alive")
	}
	if ns := pidNamespace(); ns == "" || self.PIDNS != ns {
		t.Fatalf("own PID namespace %q, owner's %q", ns, self.PIDNS)
	}
	if processAlive(1<<22+7, "") {
		t.Fatal("nonexistent PID reported alive")
	}
}
