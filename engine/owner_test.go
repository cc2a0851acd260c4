package engine

import "testing"

func TestOwnerOrphaned(t *testing.T) {
	me := owner{Host: "h", PID: 10, Start: "100"}
	alive := func(pid int, start string) bool { return pid == 20 && start == "200" }
	tests := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{LabelBridge: "1", LabelHost: "h", LabelPID: "10", LabelPIDStart: "100"}, false}, // mine
		{map[string]string{LabelBridge: "1", LabelHost: "h", LabelPID: "20", LabelPIDStart: "200"}, false}, // live peer
		{map[string]string{LabelBridge: "1", LabelHost: "h", LabelPID: "20", LabelPIDStart: "201"}, true},  // pid reused
		{map[string]string{LabelBridge: "1", LabelHost: "h", LabelPID: "30", LabelPIDStart: "300"}, true},  // dead
		{map[string]string{LabelBridge: "1", LabelHost: "h", LabelPID: "10", LabelPIDStart: "99"}, true},   // my pid, earlier process
		{map[string]string{LabelBridge: "1", LabelHost: "other", LabelPID: "30"}, false},                   // another host's
		{map[string]string{LabelBridge: "1", LabelHost: "h", LabelPID: "junk"}, true},
		{map[string]string{LabelHost: "h", LabelPID: "30"}, false}, // not ours
	}
	for i, tt := range tests {
		if got := me.orphaned(tt.labels, alive); got != tt.want {
			t.Errorf("case %d %v: orphaned = %v, want %v", i, tt.labels, got, tt.want)
		}
	}
}

func TestProcessAlive(t *testing.T) {
	self := currentOwner()
	if self.Start == "" {
		t.Fatal("cannot read own start time")
	}
	if !processAlive(self.PID, self.Start) {
		t.Fatal("own process reported dead")
	}
	if processAlive(self.PID, self.Start+"1") {
		t.Fatal("own PID with another start time reported alive")
	}
	if processAlive(1<<22+7, "") {
		t.Fatal("nonexistent PID reported alive")
	}
}
