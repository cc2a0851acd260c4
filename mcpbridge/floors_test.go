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
)

// TestFloors keeps the package's files in floors (ARCHITECTURE.md,
// "Inside mcpbridge"): a file uses only names declared in its own file or
// in files that stand below it, so the files' uses of each other form no
// loop; and no file below bridge.go declares a method of Bridge or names
// it. A use is an identifier that names what another file declares: a
// type, function, method, field, package-level variable or constant.
func TestFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the package with its types")
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}, ".")
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading the package: %v %v", err, pkgs)
	}
	pkg := pkgs[0]
	files := map[string]*ast.File{}
	uses := map[string]map[string]bool{} // file → the files it uses
	for _, f := range pkg.Syntax {
		p := filepath.Base(pkg.Fset.File(f.Pos()).Name())
		files[p] = f
		uses[p] = map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := pkg.TypesInfo.Uses[id]
			if obj == nil || obj.Pkg() != pkg.Types {
				return true
			}
			if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != pkg.Types.Scope() {
				return true // a local variable or parameter
			}
			if d := filepath.Base(pkg.Fset.Position(obj.Pos()).Filename); d != p {
				uses[p][d] = true
			}
			return true
		})
	}
	// Kahn's order: a file stands above every file it uses.
	var order []string
	left := map[string]bool{}
	for p := range files {
		left[p] = true
	}
	for len(left) > 0 {
		var ground []string
		for p := range left {
			if !slices.ContainsFunc(sortedKeys(uses[p]), func(q string) bool { return left[q] }) {
				ground = append(ground, p)
			}
		}
		if len(ground) == 0 {
			var loop []string
			for _, p := range sortedKeys(left) {
				for _, q := range sortedKeys(uses[p]) {
					if left[q] {
						loop = append(loop, p+" -> "+q)
					}
				}
			}
			t.Fatalf("these files use each other in a loop (a method or type of a higher file used below it):\n%s", strings.Join(loop, "\n"))
		}
		sort.Strings(ground)
		for _, p := range ground {
			delete(left, p)
		}
		order = append(order, ground...)
	}
	below := map[string]bool{}
	for p := range closure(uses, "bridge.go") {
		below[p] = true
	}
	for p := range below {
		if members := methodsOf(files[p], "Bridge"); len(members) > 0 {
			t.Errorf("%s stands below bridge.go but declares Bridge methods %v: move them to a file above it", p, members)
		}
	}
	t.Logf("from the ground up: %s", strings.Join(order, " "))
}

// closure returns the files p uses, directly or not.
func closure(uses map[string]map[string]bool, p string) map[string]bool {
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
	walk(p)
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
