package entrypoint

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRuntimeModulesEmbedded checks that the program sent to a sandbox
// carries every embedded runtime module once and the sandbox API, that
// each module imports only those listed before it, and that nothing of
// the runtime imports the sandbox API (the bridge's init code does).
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
		for _, m := range imports.FindAllStringSubmatch(readRuntimeFile("runtime/"+name+".py"), -1) {
			if j := slices.Index(runtimeModules, m[1]); j >= i {
				t.Errorf("%s.py imports mcp_sandbox_%s, listed after it", name, m[1])
			}
			if "mcp_sandbox_"+m[1] == sandboxAPIModule {
				t.Errorf("%s.py imports the sandbox API", name)
			}
		}
	}
	program := string(runtimeProgram)
	last := -1
	for _, name := range runtimeModules {
		entry := `"mcp_sandbox_` + name + `": ("<mcp-` + name + `>", `
		at := strings.Index(program, entry)
		if at <= last || strings.Count(program, entry) != 1 {
			t.Fatalf("module %s not shipped once and in order in the program", name)
		}
		last = at
	}
	api := `"` + sandboxAPIModule + `": ("<mcp-sandbox-api>", `
	if at := strings.Index(program, api); at <= last || !strings.Contains(program[at:], ", True),\n") {
		t.Fatal("the program does not ship the sandbox API, with its lines, after the runtime's modules")
	}
	if !strings.HasSuffix(program, readRuntimeFile("runtime/runtime.py")) {
		t.Fatal("the program does not end with runtime.py")
	}
}
