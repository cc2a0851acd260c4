package entrypoint

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRuntimeModulesEmbedded checks that the program sent to a sandbox
// carries every embedded runtime module once, and that each module imports
// only those installed before it.
func TestRuntimeModulesEmbedded(t *testing.T) {
	files, err := fs.Glob(runtimeFiles, "runtime/*.py")
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "runtime/"), ".py")
		if name != "runtime" {
			embedded = append(embedded, name)
		}
	}
	listed := slices.Sorted(slices.Values(runtimeModules))
	if !slices.Equal(listed, embedded) || len(slices.Compact(slices.Clone(listed))) != len(listed) {
		t.Fatalf("runtimeModules %v, embedded modules %v", runtimeModules, embedded)
	}
	imports := regexp.MustCompile(`(?m)^(?:import|from) mcp_sandbox_(\w+)`)
	for i, name := range append(slices.Clone(runtimeModules), "runtime") {
		for _, m := range imports.FindAllStringSubmatch(readRuntimeFile(name+".py"), -1) {
			if j := slices.Index(runtimeModules, m[1]); j >= i {
				t.Errorf("%s.py imports mcp_sandbox_%s, installed after it", name, m[1])
			}
		}
	}
	program := string(runtimeProgram)
	last := -1
	for _, name := range runtimeModules {
		at := strings.Index(program, `("mcp_sandbox_`+name+`", "<mcp-`+name+`>", `)
		if at <= last {
			t.Fatalf("module %s not installed in order in the program", name)
		}
		last = at
	}
	if !strings.HasSuffix(program, readRuntimeFile("runtime.py")) {
		t.Fatal("the program does not end with runtime.py")
	}
}
