package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fieldTable maps a field path ("HostConfig.Resources.Memory") to its
// expected value. checkFields asserts each entry and that no other field
// of the walked values is set, so a new hardening field cannot slip in
// untested and a removed one is noticed.
type fieldTable map[string]any

func checkFields(t *testing.T, want fieldTable, roots map[string]any) {
	t.Helper()
	got := map[string]any{}
	for name, root := range roots {
		collectFields(name, reflect.ValueOf(root), got)
	}
	for _, p := range slices.Sorted(maps.Keys(want)) {
		t.Run(p, func(t *testing.T) {
			g, ok := got[p]
			if !ok {
				t.Fatalf("%s is not set, want %#v", p, want[p])
			}
			if !reflect.DeepEqual(g, want[p]) {
				t.Fatalf("%s = %#v, want %#v", p, g, want[p])
			}
		})
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s = %#v is set but not covered by the table", p, g)
		}
	}
}

// collectFields records every non-zero leaf of v under path. Structs are
// walked field by field (embedded structs' fields as promoted); pointers
// are followed; slices of structs and
// maps are recorded whole, as are other leaves.
func collectFields(path string, v reflect.Value, out map[string]any) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Elem().Kind() == reflect.Struct {
			collectFields(path, v.Elem(), out)
			return
		}
		out[path] = v.Elem().Interface()
	case reflect.Struct:
		typ := v.Type()
		for i := range v.NumField() {
			f := typ.Field(i)
			switch {
			case !f.IsExported():
			case f.Anonymous && f.Type.Kind() == reflect.Struct:
				collectFields(path, v.Field(i), out) // promoted fields
			default:
				collectFields(path+"."+f.Name, v.Field(i), out)
			}
		}
	default:
		if !v.IsZero() {
			out[path] = v.Interface()
		}
	}
}

func TestTmpfsOptions(t *testing.T) {
	got := strings.Join(tmpfsOptions(64<<20, "1000", "1777"), ",")
	for _, o := range []string{"rw", "noexec", "nosuid", "nodev", "size=67108864", "uid=1000", "gid=1000", "mode=1777"} {
		if !strings.Contains(","+got+",", ","+o+",") {
			t.Errorf("tmpfsOptions = %q, missing %q", got, o)
		}
	}
	if got := strings.Join(tmpfsOptions(1024, "", "0755"), ","); got != "rw,noexec,nosuid,nodev,size=1024,mode=0755" {
		t.Errorf("tmpfsOptions without user = %q", got)
	}
}

// The specs both backends' hardening tables are built from: every zero
// value, and every operator setting away from its default.
var (
	defaultSpec  = Spec{Cmd: []string{"python3", "-u", "-"}, Session: "s1"}
	operatorSpec = Spec{
		Image: "localhost/py:1", Cmd: []string{"python3"}, User: "1000:1000",
		MemoryBytes: 64 << 20, PidsLimit: 32, NanoCPUs: 1_500_000_000,
		TmpBytes: 1 << 20, WorkspaceBytes: 2 << 20, OutBytes: 3 << 20, InBytes: 4 << 20, SiteBytes: 5 << 20,
		Volumes: []VolumeMount{{Name: "mcp-pkgs-0123", Target: PackagesDir, ReadOnly: true}},
		NoFile:  256, NProc: 64,
		OCIRuntime: "runsc", Session: "s2",
	}
	// runcSpec is operatorSpec under runc, where the limits on tasks are
	// the operator's as they are; under gVisor (operatorSpec) they move.
	runcSpec = func() Spec { s := operatorSpec; s.OCIRuntime = "runc"; return s }()
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

func testOwner() owner { return owner{Host: "h1", PID: 42, Start: "777"} }

func wantLabels(session string) map[string]string {
	return map[string]string{
		LabelBridge:   "1",
		LabelHost:     "h1",
		LabelPID:      "42",
		LabelPIDStart: "777",
		LabelSession:  session,
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
