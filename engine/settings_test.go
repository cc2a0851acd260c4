package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoadSettingsDefaults(t *testing.T) {
	s, err := LoadSettings(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.Runtime != "" || s.Image != "python:3.14-slim" || s.User != "65534:65534" ||
		s.MemoryBytes != 512<<20 || s.PidsLimit != 128 || s.NanoCPUs != 0 || s.OCIRuntime != "" {
		t.Fatalf("defaults = %+v", s)
	}
	var nofile, nproc unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	unix.Getrlimit(unix.RLIMIT_NPROC, &nproc)
	if s.NoFile == 0 || s.NoFile > nofile.Max || s.NProc == 0 || s.NProc > nproc.Max {
		t.Fatalf("rlimits nofile=%d (hard %d) nproc=%d (hard %d): want set and at or below the hard limits",
			s.NoFile, nofile.Max, s.NProc, nproc.Max)
	}
}

func TestLoadSettingsGood(t *testing.T) {
	tests := []struct {
		env   map[string]string
		check func(Settings) bool
	}{
		{map[string]string{EnvRuntime: "Docker"}, func(s Settings) bool { return s.Runtime == "docker" }},
		{map[string]string{EnvRuntime: "podman"}, func(s Settings) bool { return s.Runtime == "podman" }},
		{map[string]string{EnvRuntime: "auto"}, func(s Settings) bool { return s.Runtime == "" }},
		{map[string]string{EnvImage: "localhost/sandbox-python:3.11"}, func(s Settings) bool { return s.Image == "localhost/sandbox-python:3.11" }},
		{map[string]string{EnvUser: "1000:1000"}, func(s Settings) bool { return s.User == "1000:1000" }},
		{map[string]string{EnvUser: "1000"}, func(s Settings) bool { return s.User == "1000" }},
		{map[string]string{EnvMemory: "1g"}, func(s Settings) bool { return s.MemoryBytes == 1<<30 }},
		{map[string]string{EnvMemory: "256MiB"}, func(s Settings) bool { return s.MemoryBytes == 256<<20 }},
		{map[string]string{EnvMemory: " 64m "}, func(s Settings) bool { return s.MemoryBytes == 64<<20 }},
		{map[string]string{EnvPids: "64"}, func(s Settings) bool { return s.PidsLimit == 64 }},
		{map[string]string{EnvCPUs: "1.5"}, func(s Settings) bool { return s.NanoCPUs == 1_500_000_000 }},
		{map[string]string{EnvCPUs: "0.25"}, func(s Settings) bool { return s.NanoCPUs == 250_000_000 }},
		{map[string]string{EnvOCIRuntime: "runsc"}, func(s Settings) bool { return s.OCIRuntime == "runsc" }},
		{map[string]string{EnvIdle: "60"}, func(s Settings) bool { return s.IdleTimeout == time.Minute }},
		{map[string]string{EnvIdle: "0"}, func(s Settings) bool { return s.IdleTimeout == 0 }},
		{nil, func(s Settings) bool { return s.IdleTimeout == 300*time.Second && s.MaxOutputBytes == 1<<20 }},
		{map[string]string{EnvMaxOutput: "64k"}, func(s Settings) bool { return s.MaxOutputBytes == 64<<10 }},
	}
	for _, tt := range tests {
		s, err := LoadSettings(envOf(tt.env))
		if err != nil || !tt.check(s) {
			t.Errorf("LoadSettings(%v) = %+v, %v", tt.env, s, err)
		}
	}
}

func TestLoadSettingsBad(t *testing.T) {
	tests := []struct{ name, value string }{
		{EnvRuntime, "kubernetes"},
		{EnvImage, "python 3"},
		{EnvUser, "nobody"},
		{EnvUser, "0:0"},
		{EnvUser, "1000:root"},
		{EnvMemory, "lots"},
		{EnvMemory, "1k"},
		{EnvMemory, "-5m"},
		{EnvPids, "many"},
		{EnvPids, "0"},
		{EnvPids, "-1"},
		{EnvCPUs, "fast"},
		{EnvCPUs, "0"},
		{EnvCPUs, "NaN"},
		{EnvCPUs, "Inf"},
		{EnvOCIRuntime, "/usr/bin/runsc"},
		{EnvIdle, "5m"},
		{EnvIdle, "-1"},
		{EnvMaxOutput, "lots"},
		{EnvMaxOutput, "10"},
	}
	for _, tt := range tests {
		_, err := LoadSettings(envOf(map[string]string{tt.name: tt.value}))
		if err == nil {
			t.Errorf("%s=%q accepted", tt.name, tt.value)
			continue
		}
		if !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.value) {
			t.Errorf("%s=%q: error %q does not name the variable and value", tt.name, tt.value, err)
		}
	}
}

func TestLoadSettingsReportsEveryBadVariable(t *testing.T) {
	_, err := LoadSettings(envOf(map[string]string{EnvMemory: "lots", EnvPids: "many"}))
	if err == nil || !strings.Contains(err.Error(), EnvMemory) || !strings.Contains(err.Error(), EnvPids) {
		t.Fatalf("err = %v, want both variables named", err)
	}
	if errors.Unwrap(err) == nil {
		t.Fatal("error does not wrap the per-variable errors")
	}
}

func TestSettingsSpec(t *testing.T) {
	s, _ := LoadSettings(envOf(map[string]string{EnvMemory: "64m", EnvCPUs: "2", EnvOCIRuntime: "runsc"}))
	spec := s.Spec("sess", []string{"python3"})
	if spec.MemoryBytes != 64<<20 || spec.NanoCPUs != 2e9 || spec.OCIRuntime != "runsc" || spec.Session != "sess" ||
		spec.Image != s.Image || spec.NoFile != s.NoFile || spec.NProc != s.NProc || spec.PidsLimit != 128 {
		t.Fatalf("Spec = %+v", spec)
	}
}

func TestOwnerOrphaned(t *testing.T) {
	me := Owner{Host: "h", PID: 10, Start: "100"}
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
	self := Self()
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
