package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// darwinkitModule is the module whose generated bindings name every
// Objective-C selector and class the checked code may pass as a string.
const darwinkitModule = "github.com/progrium/darwinkit"

// bindings are the selector and class names darwinkit's generated files
// send and look up: what the Objective-C runtime will be asked for. A string
// outside them is a typo or an API darwinkit does not describe, and objc
// reports neither: a wrong selector is sent and answered by a crash ("does not
// recognize selector"), or by nothing when darwinkit finds no method; a wrong
// class name gives a nil class.
type bindings struct {
	selectors map[string]bool
	classes   map[string]bool
	// protocols are those darwinkit wraps delegates in and those its generated
	// protocols.gen.m files reference with @protocol(…): a protocol no loaded
	// code references is not registered, and objc_getProtocol returns nil.
	protocols map[string]bool
}

// The generated files spell every call the same way, so a literal match is
// exact: objc.Sel("name") and objc.GetClass("NSName"). Names never contain a
// quote or a backslash.
var (
	genSelector = regexp.MustCompile(`\bobjc\.Sel\("([^"\\]+)"\)`)
	genClass    = regexp.MustCompile(`\bobjc\.GetClass\("([^"\\]+)"\)`)
	genWrap     = regexp.MustCompile(`\bobjc\.WrapAsProtocol\("([^"\\]+)"`)
	genProtocol = regexp.MustCompile(`@protocol\(([A-Za-z0-9_]+)\)`)
)

// loadBindings reads every generated file (*.gen.go) of the darwinkit module
// in dir. Hand-written files and examples (directories starting with "_",
// which the go command ignores too) are not bindings.
func loadBindings(dir string) (*bindings, error) {
	b := &bindings{selectors: make(map[string]bool), classes: make(map[string]bool), protocols: make(map[string]bool)}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "protocols.gen.m" {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range genProtocol.FindAllSubmatch(src, -1) {
				b.protocols[string(m[1])] = true
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".gen.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, m := range genSelector.FindAllSubmatch(src, -1) {
			b.selectors[string(m[1])] = true
		}
		for _, m := range genClass.FindAllSubmatch(src, -1) {
			b.classes[string(m[1])] = true
		}
		for _, m := range genWrap.FindAllSubmatch(src, -1) {
			b.protocols[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading darwinkit's generated bindings in %s: %w", dir, err)
	}
	// An empty set would make every string an error, or worse, a future
	// loader bug that finds a handful would pass a wrong name that happens
	// to be among them: insist on a plausible size.
	if files == 0 || len(b.selectors) < 1000 || len(b.classes) < 100 || len(b.protocols) < 10 {
		return nil, fmt.Errorf("darwinkit's generated bindings in %s hold %d selectors, %d classes and %d protocols in %d files; that is not a darwinkit module", dir, len(b.selectors), len(b.classes), len(b.protocols), files)
	}
	for _, sel := range responderActions {
		b.selectors[sel] = true
	}
	return b, nil
}

// responderActions are standard action messages that AppKit sends along the responder chain
// and that its classes answer without declaring them in a header darwinkit generates from:
// the Edit menu's Undo and Redo reach the key window, which passes them to its undo manager.
// A main menu's nil-targeted items send them by name.
var responderActions = []string{"undo:", "redo:"}
