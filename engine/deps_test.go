package engine_test

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// engineClients are the module paths of the engines' clients, which only
// the backends (engine/docker, engine/podman, engine/kube) and what
// assembles them (engine/auto, the command) link.
var engineClients = []string{
	"github.com/docker/docker",
	"github.com/containers/podman",
	"k8s.io/client-go",
}

// TestInterfaceOnlyDeps: the packages that need only the engine's
// interface (engine itself, the session in entrypoint, the bridge in
// mcpbridge and the packages below it) link no engine's client, with the
// Podman build tags too.
func TestInterfaceOnlyDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the module's packages with their dependencies")
	}
	const mod = "github.com/mcp-code-exec/mcp-server-code-execution-mode/"
	pkgs, err := packages.Load(&packages.Config{
		Mode:       packages.NeedName | packages.NeedImports | packages.NeedDeps,
		BuildFlags: []string{"-tags", engine.PodmanBuildTags},
		Dir:        "..",
	}, mod+"engine", mod+"entrypoint/...", mod+"mcpbridge/...")
	if err != nil {
		t.Fatalf("listing the packages: %v", err)
	}
	if len(pkgs) < 3 {
		t.Fatalf("listed %d packages; want engine, entrypoint and mcpbridge's", len(pkgs))
	}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("listing %s: %v", p.PkgPath, p.Errors)
		}
		// path holds, for each package reached, the one that imports it,
		// to say how a client is reached.
		path := map[string]string{p.PkgPath: ""}
		queue := []*packages.Package{p}
		for len(queue) > 0 {
			q := queue[0]
			queue = queue[1:]
			for _, imp := range q.Imports {
				if _, seen := path[imp.PkgPath]; seen {
					continue
				}
				path[imp.PkgPath] = q.PkgPath
				if slices.ContainsFunc(engineClients, func(c string) bool {
					return imp.PkgPath == c || strings.HasPrefix(imp.PkgPath, c+"/")
				}) {
					var chain []string
					for at := imp.PkgPath; at != ""; at = path[at] {
						chain = append(chain, at)
					}
					slices.Reverse(chain)
					t.Errorf("%s links an engine's client: %s", p.PkgPath, strings.Join(chain, " → "))
					continue
				}
				queue = append(queue, imp)
			}
		}
	}
}
