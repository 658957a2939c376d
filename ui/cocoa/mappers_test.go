package cocoa

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// The Cocoa shell is compiled only on a Mac, so a node kind added to package view without a
// mapper would show up there as "(view.X)" in a window. Every type of package view that is
// a Node must have its case in the renderer's switch.
func TestEveryNodeKindHasAMapper(t *testing.T) {
	fset := token.NewFileSet()
	viewFiles, err := filepath.Glob(filepath.Join("..", "view", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, name := range viewFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "node" || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok {
				kinds = append(kinds, id.Name)
			}
		}
	}
	if len(kinds) < 5 {
		t.Fatalf("found only %v as view node kinds; the test no longer reads package view right", kinds)
	}

	f, err := parser.ParseFile(fset, "render_darwin.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var mapped []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "render" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if sel, ok := e.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "view" {
						mapped = append(mapped, sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	for _, k := range kinds {
		if !slices.Contains(mapped, k) {
			t.Errorf("view.%s has no case in renderer.render (render_darwin.go)", k)
		}
	}
}
