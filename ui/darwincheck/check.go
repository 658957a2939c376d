package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The build being checked. arm64 is what Apple silicon Macs run; the shell's
// API use does not differ between darwin/amd64 and darwin/arm64, but sizes and
// file selection can, so check the one we ship.
const (
	targetOS   = "darwin"
	targetArch = "arm64"
)

// options says what to check and from where.
type options struct {
	Dir      string   // where the go command runs; "" is the current directory
	Patterns []string // package patterns, as for go build
}

// diagnostic is one problem found, positioned for a person or an editor.
type diagnostic struct {
	Pos token.Position // Filename is relative to options.Dir when inside it
	Msg string
}

func (d diagnostic) String() string {
	switch {
	case d.Pos.Filename == "":
		return d.Msg
	case d.Pos.Line == 0:
		return fmt.Sprintf("%s: %s", d.Pos.Filename, d.Msg)
	default:
		return fmt.Sprintf("%s:%d:%d: %s", d.Pos.Filename, d.Pos.Line, d.Pos.Column, d.Msg)
	}
}

// listedPackage holds the fields of `go list -json` that the check needs.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	DepOnly    bool
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	ImportMap  map[string]string
	Module     *struct{ Path, Dir, GoVersion string }
	Error      *struct{ Pos, Err string }
}

// listFields is passed to -json so the go command does not compute and
// serialise fields the check never reads.
const listFields = "ImportPath,Name,Dir,Standard,DepOnly,GoFiles,CgoFiles,Imports,ImportMap,Module,Error"

// check lists the packages matching opts.Patterns and everything they import,
// as a darwin/arm64 cgo build would see them, and type-checks them all. The
// returned error means the check could not run; problems in the code are
// returned as diagnostics, sorted by position.
func check(ctx context.Context, opts options) ([]diagnostic, error) {
	base := opts.Dir
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding the current directory: %w", err)
		}
		base = wd
	}
	base, err := filepath.Abs(base)
	if err != nil {
		return nil, err
	}

	pkgs, err := goList(ctx, base, opts)
	if err != nil {
		return nil, err
	}
	c := &checker{
		fset:  token.NewFileSet(),
		sizes: types.SizesFor("gc", targetArch),
		base:  base,
		units: make(map[string]*unit, len(pkgs)),
	}
	return c.run(pkgs), nil
}

// goList runs `go list -deps` for the darwin/arm64 cgo build. Its output
// lists every package after the packages it imports, which is the order the
// type-checker needs.
func goList(ctx context.Context, dir string, opts options) ([]*listedPackage, error) {
	args := []string{"list", "-e", "-deps", "-compiler=gc", "-json=" + listFields}
	for _, p := range opts.Patterns {
		if strings.HasPrefix(p, "-") {
			return nil, fmt.Errorf("package pattern %q looks like a flag; put flags before the packages", p)
		}
	}
	args = append(args, opts.Patterns...)

	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// CGO_ENABLED must be set explicitly: the go command turns cgo off by
	// default when cross-compiling, and then the cgo files (the whole Cocoa
	// shell) would silently drop out of the build being checked.
	cmd.Env = append(os.Environ(), "GOOS="+targetOS, "GOARCH="+targetArch, "CGO_ENABLED=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s in %s failed: %v\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}

	var pkgs []*listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		p := new(listedPackage)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading the output of go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no packages match %s in %s", strings.Join(opts.Patterns, " "), dir)
	}
	return pkgs, nil
}

// unit is one package's place in the concurrent check. done is closed once
// pkg (or importErr) is final; readers wait on it, which is what makes
// reading pkg from another goroutine safe.
type unit struct {
	list      *listedPackage
	done      chan struct{}
	pkg       *types.Package
	importErr error
}

type checker struct {
	fset  *token.FileSet
	sizes types.Sizes
	base  string
	units map[string]*unit

	// bindingsDir is the darwinkit module's source, when the build has it;
	// its generated bindings are read once, on first use.
	bindingsDir  string
	bindingsOnce sync.Once
	bindingsSet  *bindings
	bindingsErr  error

	mu    sync.Mutex
	diags []diagnostic
}

func (c *checker) run(pkgs []*listedPackage) []diagnostic {
	for _, p := range pkgs {
		c.units[p.ImportPath] = &unit{list: p, done: make(chan struct{})}
		if p.Module != nil && p.Module.Path == darwinkitModule && p.Module.Dir != "" {
			c.bindingsDir = p.Module.Dir
		}
	}

	// Each package waits for the packages it imports, then takes one of a
	// fixed number of slots, so independent packages are checked in parallel
	// without oversubscribing the machine.
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, p := range pkgs {
		u := c.units[p.ImportPath]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(u.done)
			for _, imp := range imports(p) {
				if dep, ok := c.units[imp]; ok {
					<-dep.done
				}
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			c.checkPackage(u)
		}()
	}
	wg.Wait()

	// go list reports a missing or broken import at the importing line, and
	// go/types then says it "could not import" it at the same place: keep
	// the go command's message, which says what to do.
	type place struct {
		file         string
		line, column int
	}
	explained := make(map[place]bool)
	for _, d := range c.diags {
		if !isImportFailure(d.Msg) {
			explained[place{d.Pos.Filename, d.Pos.Line, d.Pos.Column}] = true
		}
	}
	seen := make(map[string]bool, len(c.diags))
	out := c.diags[:0]
	for _, d := range c.diags {
		if isImportFailure(d.Msg) && explained[place{d.Pos.Filename, d.Pos.Line, d.Pos.Column}] {
			continue
		}
		if s := d.String(); !seen[s] {
			seen[s] = true
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return out[i].Msg < out[j].Msg
	})
	return out
}

// isImportFailure is go/types' message for an import the importer refused.
func isImportFailure(msg string) bool { return strings.HasPrefix(msg, "could not import ") }

// imports are the packages p's files import, as the go command resolved
// them. ImportMap is included so that importFor never has to wait while
// holding a slot.
func imports(p *listedPackage) []string {
	paths := append([]string(nil), p.Imports...)
	for _, resolved := range p.ImportMap {
		paths = append(paths, resolved)
	}
	return paths
}

func (c *checker) report(pos token.Position, msg string) {
	if pos.Filename != "" {
		pos.Filename = c.relative(pos.Filename)
	}
	c.mu.Lock()
	c.diags = append(c.diags, diagnostic{Pos: pos, Msg: msg})
	c.mu.Unlock()
}

// relative shortens paths inside the checked tree, the way the compiler and
// go vet print them.
func (c *checker) relative(path string) string {
	rel, err := filepath.Rel(c.base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

func (c *checker) checkPackage(u *unit) {
	p := u.list
	if p.ImportPath == "unsafe" {
		u.pkg = types.Unsafe
		return
	}
	if p.Error != nil {
		c.reportListError(p)
		u.importErr = errors.New(strings.TrimSpace(p.Error.Err))
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			return
		}
	}

	files := make([]*ast.File, 0, len(p.GoFiles)+len(p.CgoFiles))
	mode := parser.SkipObjectResolution
	if !p.DepOnly {
		mode |= parser.ParseComments
	}
	for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
		f, err := parser.ParseFile(c.fset, filepath.Join(p.Dir, name), nil, mode)
		if err != nil {
			c.reportParseError(err)
		}
		if f != nil {
			files = append(files, f)
		}
	}

	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			return c.importFor(p, path)
		}),
		// cgo would turn `import "C"` into generated Go; without a C
		// toolchain for darwin we treat C as a package whose every member
		// is unknown. Go code around the C calls (all of darwinkit's API
		// surface) is still checked in full.
		FakeImportC: true,
		Sizes:       c.sizes,
		GoVersion:   goVersion(p),
		// Only the exported API of a dependency matters to the code being
		// checked; skipping its function bodies keeps the check fast.
		IgnoreFuncBodies: p.DepOnly,
		Error: func(err error) {
			var terr types.Error
			if errors.As(err, &terr) {
				c.report(terr.Fset.Position(terr.Pos), terr.Msg)
				return
			}
			c.report(token.Position{}, err.Error())
		},
	}
	var info *types.Info
	if !p.DepOnly {
		info = &types.Info{
			Types:      make(map[ast.Expr]types.TypeAndValue),
			Defs:       make(map[*ast.Ident]types.Object),
			Uses:       make(map[*ast.Ident]types.Object),
			Selections: make(map[*ast.SelectorExpr]*types.Selection),
		}
	}
	pkg, _ := conf.Check(p.ImportPath, c.fset, files, info)
	if info != nil && pkg != nil {
		(&lint{c: c, pkg: pkg, info: info, files: files, bind: c.bindings}).run()
	}
	if u.importErr == nil {
		// A package with type errors is still importable: its dependents
		// then report their own mistakes instead of one vague import error.
		u.pkg = pkg
	}
}

// bindings are darwinkit's selector and class names, read on first use.
func (c *checker) bindings() (*bindings, error) {
	c.bindingsOnce.Do(func() {
		if c.bindingsDir == "" {
			c.bindingsErr = fmt.Errorf("the build does not include %s, whose bindings name the selectors and classes", darwinkitModule)
			return
		}
		c.bindingsSet, c.bindingsErr = loadBindings(c.bindingsDir)
	})
	return c.bindingsSet, c.bindingsErr
}

// importFor resolves an import written in package p the way the go command
// resolved it (vendored standard-library packages are renamed in ImportMap).
func (c *checker) importFor(p *listedPackage, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if mapped, ok := p.ImportMap[path]; ok {
		path = mapped
	}
	dep, ok := c.units[path]
	if !ok {
		return nil, fmt.Errorf("%s is not in the darwin/%s build's package list", path, targetArch)
	}
	// Already closed: a package only starts once everything it imports is done.
	<-dep.done
	if dep.importErr != nil {
		return nil, dep.importErr
	}
	return dep.pkg, nil
}

func (c *checker) reportListError(p *listedPackage) {
	msg := strings.TrimSpace(p.Error.Err)
	// The go command prints positions relative to where it ran.
	pos := parseListPos(p.Error.Pos, c.base)
	if pos.Filename == "" {
		msg = p.ImportPath + ": " + msg
	}
	c.report(pos, msg)
}

func (c *checker) reportParseError(err error) {
	var list scanner.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			c.report(e.Pos, e.Msg)
		}
		return
	}
	c.report(token.Position{}, err.Error())
}

// parseListPos turns go list's "file:line:col" position string back into a
// position. Relative file names are taken relative to dir.
func parseListPos(s, dir string) token.Position {
	if s == "" {
		return token.Position{}
	}
	var pos token.Position
	rest := s
	for _, field := range []*int{&pos.Column, &pos.Line} {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 0 {
			break
		}
		*field = n
		rest = rest[:i]
	}
	if pos.Line == 0 && pos.Column != 0 { // only "file:line" was given
		pos.Line, pos.Column = pos.Column, 0
	}
	pos.Filename = rest
	if !filepath.IsAbs(rest) && dir != "" {
		pos.Filename = filepath.Join(dir, rest)
	}
	return pos
}

// goVersion is the language version the package is compiled with: its
// module's go line. Standard-library packages get the checker's own version.
func goVersion(p *listedPackage) string {
	if p.Standard || p.Module == nil || p.Module.GoVersion == "" {
		return ""
	}
	v := "go" + p.Module.GoVersion
	if !version.IsValid(v) {
		return ""
	}
	return v
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
