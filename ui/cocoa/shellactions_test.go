package cocoa

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every shell action the views can carry (view's "Shell actions" block) is carried out by the
// Cocoa shell's act, is one shellAction names (so that it never goes to the model), and is
// refused by the presenter as the shell's: a new one forgotten in the Mac's shell is caught
// here, on Linux, where that shell does not build.
func TestEveryShellActionIsCarriedOut(t *testing.T) {
	fset := token.NewFileSet()
	parse := func(path string) *ast.File {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var declared []string
	for _, d := range parse(filepath.Join("..", "view", "view.go")).Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE || g.Doc == nil || !strings.HasPrefix(g.Doc.Text(), "Shell actions") {
			continue
		}
		for _, s := range g.Specs {
			declared = append(declared, s.(*ast.TypeSpec).Name.Name)
		}
	}
	if len(declared) < 4 {
		t.Fatalf("found %v in view's Shell actions block; the test no longer finds it", declared)
	}
	cases := func(file, fn string) []string {
		var out []string
		for _, d := range parse(file).Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != fn {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				if cc, ok := n.(*ast.CaseClause); ok {
					for _, e := range cc.List {
						if sel, ok := e.(*ast.SelectorExpr); ok {
							if id, ok := sel.X.(*ast.Ident); ok && id.Name == "view" {
								out = append(out, sel.Sel.Name)
							}
						}
					}
				}
				return true
			})
		}
		if len(out) == 0 {
			t.Fatalf("no view cases in %s's %s", file, fn)
		}
		return out
	}
	for _, where := range []struct{ file, fn string }{
		{"cocoa_darwin.go", "act"},
		{"options.go", "shellAction"},
		{filepath.Join("..", "presenter", "presenter.go"), "dispatch"},
	} {
		got := cases(where.file, where.fn)
		for _, a := range declared {
			if !slices.Contains(got, a) {
				t.Errorf("%s's %s has no case for view.%s", where.file, where.fn, a)
			}
		}
	}
}
