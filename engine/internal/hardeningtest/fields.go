// Package hardeningtest holds what the hardening tests of the backends
// share: the walk of a configuration against a table of its fields, the
// specs the tables are built from, and the owner and labels they expect.
package hardeningtest

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A FieldTable maps a field path ("HostConfig.Resources.Memory") to its
// expected value. CheckFields asserts each entry and that no other field
// of the walked values is set, so a new hardening field cannot slip in
// untested and a removed one is noticed.
type FieldTable map[string]any

// CheckFields asserts that the fields of roots (named values, walked as
// collectFields does) are those of want, each with its value.
func CheckFields(t *testing.T, want FieldTable, roots map[string]any) {
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

// The specs the backends' hardening tables are built from: every zero
// value, and every operator setting away from its default.
var (
	// DefaultSpec is a spec of zero values.
	DefaultSpec = engine.Spec{Cmd: []string{"python3", "-u", "-"}, Session: "s1"}
	// OperatorSpec has every operator setting away from its default.
	OperatorSpec = engine.Spec{
		Image: "localhost/py:1", Cmd: []string{"python3"}, User: "1000:1000",
		MemoryBytes: 64 << 20, PidsLimit: 32, NanoCPUs: 1_500_000_000,
		TmpBytes: 1 << 20, WorkspaceBytes: 2 << 20, OutBytes: 3 << 20, InBytes: 4 << 20, SiteBytes: 5 << 20,
		Volumes: []engine.VolumeMount{{Name: "mcp-pkgs-0123", Target: engine.PackagesDir, ReadOnly: true}},
		NoFile:  256, NProc: 64,
		OCIRuntime: "runsc", Session: "s2", Lane: "/run/mcp-bridge/lanes/0123",
	}
	// RuncSpec is OperatorSpec under runc, where the limits on tasks are
	// the operator's as they are; under gVisor (OperatorSpec) they move.
	RuncSpec = func() engine.Spec { s := OperatorSpec; s.OCIRuntime = "runc"; return s }()
)

// Owner is the owner the tables expect.
func Owner() lifecycle.Owner { return lifecycle.Owner{Host: "h1", PID: 42, Start: "777"} }

// Labels are the labels of Owner's container of session.
func Labels(session string) map[string]string {
	return map[string]string{
		engine.LabelBridge:   "1",
		engine.LabelHost:     "h1",
		engine.LabelPID:      "42",
		engine.LabelPIDStart: "777",
		engine.LabelSession:  session,
	}
}
