package presenter

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// imports lists the imports of the Go files under dir (tests too), by file.
func imports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[path] = append(out[path], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The presenter and the view tree are OS-neutral: nothing of Cocoa, darwinkit or cgo, and no
// file of theirs is only for one OS; core never imports ui.
func TestLayers(t *testing.T) {
	for _, dir := range []string{".", "../view", "../preview"} {
		for file, ims := range imports(t, dir) {
			base := filepath.Base(file)
			if strings.Contains(base, "_darwin") || strings.Contains(base, "_linux") {
				t.Errorf("%s is for one OS", file)
			}
			for _, im := range ims {
				if im == "C" || strings.Contains(im, "darwinkit") || strings.HasPrefix(im, "github.com/openworker/openworker/ui/cocoa") {
					t.Errorf("%s imports %s", file, im)
				}
			}
		}
	}
	for file, ims := range imports(t, "../../core") {
		for _, im := range ims {
			if strings.HasPrefix(im, "github.com/openworker/openworker/ui") {
				t.Errorf("%s imports %s: core never imports ui", file, im)
			}
		}
	}
	for file, ims := range imports(t, "../view") {
		for _, im := range ims {
			if strings.HasPrefix(im, "github.com/openworker/openworker/") {
				t.Errorf("%s imports %s: the view tree depends on nothing of the app", file, im)
			}
		}
	}
}
