package engine

import (
	"fmt"
	"testing"
)

func TestTaskLimits(t *testing.T) {
	for _, tt := range []struct {
		runtime   string
		pids      int64
		nproc     uint64
		wantPids  int64
		wantNProc uint64
	}{
		{runtime: "", pids: 128, nproc: 1024, wantPids: 128, wantNProc: 1024},
		{runtime: "runc", pids: 32, nproc: 64, wantPids: 32, wantNProc: 64},
		{runtime: "crun", pids: 32, nproc: 16, wantPids: 32, wantNProc: 16},
		// gVisor: the Sentry's own tasks get room in the cgroup, and the
		// sandbox's tasks are bounded by RLIMIT_NPROC, which the Sentry
		// counts per sandbox.
		{runtime: "runsc", pids: 128, nproc: 1024, wantPids: 128 + 8*128, wantNProc: 128},
		{runtime: "runsc-kvm", pids: 32, nproc: 16, wantPids: 128 + 8*32, wantNProc: 16},
		{runtime: "gVisor", pids: 1, nproc: 1024, wantPids: 136, wantNProc: 1},
	} {
		s := Spec{OCIRuntime: tt.runtime, PidsLimit: tt.pids, NProc: tt.nproc}
		if pids, nproc := s.taskLimits(); pids != tt.wantPids || nproc != tt.wantNProc {
			t.Errorf("%q with pids %d, nproc %d: taskLimits() = %d, %d; want %d, %d",
				tt.runtime, tt.pids, tt.nproc, pids, nproc, tt.wantPids, tt.wantNProc)
		}
	}
}

func ExampleExitStatus_String() {
	fmt.Println(ExitStatus{Code: 137, OOMKilled: true, MemoryLimit: 64 << 20})
	fmt.Println(ExitStatus{Code: 137, OOMKilled: true, MemoryLimit: 2 << 30})
	fmt.Println(ExitStatus{Code: 130})
	fmt.Println(ExitStatus{Code: 3})
	// Output:
	// killed for exceeding its memory limit (OOM-killed, limit 64 MiB); killed by signal SIGKILL (exit code 137)
	// killed for exceeding its memory limit (OOM-killed, limit 2 GiB); killed by signal SIGKILL (exit code 137)
	// killed by signal SIGINT (exit code 130)
	// exited with code 3
}

func TestSpecWithDefaultsAndTaskLimits(t *testing.T) {
	s := Spec{PidsLimit: 10}.WithDefaults()
	if s.Image != defaultImage || s.User != defaultUser || s.MemoryBytes != defaultMemoryBytes || s.PidsLimit != 10 {
		t.Fatalf("WithDefaults: %+v", s)
	}
	if pids, nproc := (Spec{PidsLimit: 10}).TaskLimits(); pids != 10 || nproc != defaultNProc {
		t.Fatalf("TaskLimits under runc: %d, %d", pids, nproc)
	}
	if pids, nproc := (Spec{PidsLimit: 10, OCIRuntime: "runsc"}).TaskLimits(); pids != gVisorPidsBase+gVisorPidsPerTask*10 || nproc != 10 {
		t.Fatalf("TaskLimits under gVisor: %d, %d", pids, nproc)
	}
}
