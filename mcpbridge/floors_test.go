package mcpbridge

import (
	"go/ast"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The house's rules (ARCHITECTURE.md, "Packages" and "Inside mcpbridge"),
// which TestFloors holds for every package of mcpbridge and engine.
const (
	// module is the module's path, with its final slash.
	module = "github.com/mcp-code-exec/mcp-server-code-execution-mode/"
	// maxMethods bounds the methods of any one type: a type with more
	// is a hub that the next change has to read whole.
	maxMethods = 40
	// maxTopLines bounds the non-test lines of mcpbridge's own files:
	// a concept of its own goes into a package below it.
	maxTopLines = 5000
)

// hubs names, for a package, its hub type and the file that declares it
// alone: no file below that file declares a method of the hub or uses
// it, so that every part of the package stands without it.
var hubs = map[string]struct{ typ, file string }{
	module + "mcpbridge": {"Bridge", "bridge.go"},
}

// engineLevels are the engine's packages from the ground up: a package
// imports only packages of the module's engine at a lower level. The
// interface is at the bottom; the shared container skeleton and the
// local-process engine of the unit tests above it; the backends' shared
// hardening table test above the skeleton; the backends above them; and
// auto, which assembles the backends, at the top.
var engineLevels = map[string]int{
	"engine":                        0,
	"engine/internal/lifecycle":     1,
	"engine/enginetest":             1,
	"engine/internal/hardeningtest": 2,
	"engine/docker":                 3,
	"engine/podman":                 3,
	"engine/kube":                   3,
	"engine/auto":                   4,
}

// TestFloors holds the house's rules for every package of mcpbridge and
// engine:
//   - a package's files stand in floors: a file uses only names declared
//     in its own file or in files below it, so that the files' uses of
//     each other form no loop (a use is an identifier that names what
//     another file declares: a type, function, method, field,
//     package-level variable or constant);
//   - no file below a hub's file (hubs) declares a method of the hub;
//   - no type has more than maxMethods methods;
//   - no package below mcpbridge imports mcpbridge, or any package above
//     it: the bridge calls them, they never call back;
//   - an engine package imports only engine packages below its level
//     (engineLevels), and every engine package has a level;
//   - mcpbridge's own files hold at most maxTopLines non-test lines.
//
// The packages are loaded with the Podman build tags, so that the
// Podman backend's real files are the ones checked.
func TestFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the packages with their types")
	}
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedImports |
			packages.NeedTypes | packages.NeedTypesInfo,
		BuildFlags: []string{"-tags", engine.PodmanBuildTags},
		Dir:        "..",
	}, "./mcpbridge/...", "./engine/...")
	if err != nil {
		t.Fatalf("loading the packages: %v", err)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("loading %s: %v", p.PkgPath, p.Errors)
		}
		seen[p.PkgPath] = true
		t.Run(strings.TrimPrefix(p.PkgPath, module), func(t *testing.T) {
			checkFloors(t, p)
			checkMethods(t, p)
			checkImports(t, p)
		})
	}
	for _, want := range []string{"mcpbridge", "mcpbridge/tasks", "engine", "engine/docker", "engine/podman", "engine/kube", "engine/auto"} {
		if !seen[module+want] {
			t.Errorf("%s was not loaded: the rules were not checked for it", want)
		}
	}
	top := pkgs[slices.IndexFunc(pkgs, func(p *packages.Package) bool { return p.PkgPath == module+"mcpbridge" })]
	lines := 0
	for _, f := range top.Syntax {
		lines += top.Fset.File(f.Pos()).LineCount()
	}
	if lines > maxTopLines {
		t.Errorf("mcpbridge's own files hold %d non-test lines, over %d: move a concept of its own into a package below it", lines, maxTopLines)
	}
	t.Logf("mcpbridge's own files: %d non-test lines", lines)
}

// checkFloors orders p's files from the ground up and fails when some
// use each other in a loop, or when a file below p's hub declares its
// methods.
func checkFloors(t *testing.T, p *packages.Package) {
	files := map[string]*ast.File{}
	uses := map[string]map[string]bool{} // file → the files it uses
	for _, f := range p.Syntax {
		name := filepath.Base(p.Fset.File(f.Pos()).Name())
		files[name] = f
		uses[name] = map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != p.Types {
				return true
			}
			if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != p.Types.Scope() {
				return true // a local variable or parameter
			}
			if d := filepath.Base(p.Fset.Position(obj.Pos()).Filename); d != name {
				uses[name][d] = true
			}
			return true
		})
	}
	// Kahn's order: a file stands above every file it uses.
	var order []string
	left := map[string]bool{}
	for name := range files {
		left[name] = true
	}
	for len(left) > 0 {
		var ground []string
		for name := range left {
			if !slices.ContainsFunc(sortedKeys(uses[name]), func(q string) bool { return left[q] }) {
				ground = append(ground, name)
			}
		}
		if len(ground) == 0 {
			var loop []string
			for _, name := range sortedKeys(left) {
				for _, q := range sortedKeys(uses[name]) {
					if left[q] {
						loop = append(loop, name+" -> "+q)
					}
				}
			}
			t.Fatalf("these files use each other in a loop (a method or type of a higher file used below it):\n%s", strings.Join(loop, "\n"))
		}
		sort.Strings(ground)
		for _, name := range ground {
			delete(left, name)
		}
		order = append(order, ground...)
	}
	if hub, ok := hubs[p.PkgPath]; ok {
		if files[hub.file] == nil {
			t.Fatalf("the hub's file %s is missing", hub.file)
		}
		for below := range closure(uses, hub.file) {
			if members := methodsOf(files[below], hub.typ); len(members) > 0 {
				t.Errorf("%s stands below %s but declares %s methods %v: move them to a file above it", below, hub.file, hub.typ, members)
			}
		}
	}
	t.Logf("from the ground up: %s", strings.Join(order, " "))
}

// checkMethods fails for a named type of p with more than maxMethods
// methods.
func checkMethods(t *testing.T, p *packages.Package) {
	scope := p.Types.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		if n := named.NumMethods(); n > maxMethods {
			t.Errorf("%s has %d methods, over %d: give a part of it a type of its own", name, n, maxMethods)
		}
	}
}

// checkImports fails when p imports what its place forbids: a package
// below mcpbridge one above it, an engine package one at its level or
// above.
func checkImports(t *testing.T, p *packages.Package) {
	rel := strings.TrimPrefix(p.PkgPath, module)
	level, isEngine := engineLevels[rel]
	if strings.HasPrefix(rel, "engine") && !isEngine {
		t.Fatalf("%s has no level in engineLevels: give it one (and ARCHITECTURE.md a line)", rel)
	}
	for path := range p.Imports {
		irel, ok := strings.CutPrefix(path, module)
		if !ok {
			continue
		}
		if strings.HasPrefix(rel, "mcpbridge/") && strings.HasPrefix(rel, irel+"/") {
			t.Errorf("%s imports %s, a package above it: the bridge calls it, it never calls back", rel, irel)
		}
		if il, ok := engineLevels[irel]; ok && isEngine && il >= level {
			t.Errorf("%s (level %d) imports %s (level %d): an engine package imports only those below it", rel, level, irel, il)
		}
	}
}

// closure returns the files name uses, directly or not.
func closure(uses map[string]map[string]bool, name string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(q string) {
		for r := range uses[q] {
			if !seen[r] {
				seen[r] = true
				walk(r)
			}
		}
	}
	walk(name)
	return seen
}

// methodsOf returns the methods of typ that f declares.
func methodsOf(f *ast.File, typ string) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil {
			continue
		}
		rt := fd.Recv.List[0].Type
		if s, ok := rt.(*ast.StarExpr); ok {
			rt = s.X
		}
		if id, ok := rt.(*ast.Ident); ok && id.Name == typ {
			out = append(out, fd.Name.Name)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
