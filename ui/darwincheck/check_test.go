package main

import (
	"bytes"
	"context"
	"flag"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// testModule is a module of its own (testdata is outside ./...), requiring
// the same darwinkit release as the app, so the checker sees real darwinkit
// code, cgo files and all.
const testModule = "testdata/mod"

// TestRun checks the whole test module once (type-checking darwinkit and the
// standard library for darwin takes a few seconds, several times that under
// the race detector) and compares each package's problems with its golden
// file; a second run proves a clean package passes on its own.
func TestRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), testModule, []string{"./..."}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit status %d for ./..., want 1\nstderr:\n%s", code, &stderr)
	}
	byPackage := make(map[string]string)
	var lastDir string
	for _, line := range strings.SplitAfter(stdout.String(), "\n") {
		if line == "" {
			continue
		}
		// Continuation lines of a multi-line message start with a tab and
		// belong to the package of the line before.
		dir, _, _ := strings.Cut(line, "/")
		if strings.HasPrefix(line, "\t") {
			dir = lastDir
		}
		lastDir = dir
		byPackage[dir] += line
	}

	tests := []struct {
		pkg          string
		wantProblems bool
		why          string
	}{
		{pkg: "good", wantProblems: false, why: "correct darwinkit use, a cgo file, and a Linux-only file (with a type error) that darwin does not compile"},
		{pkg: "nomethod", wantProblems: true, why: "a method AppKit's button does not have"},
		{pkg: "wrongarg", wantProblems: true, why: "arguments of the wrong type, one of them in a cgo file"},
		{pkg: "missingpkg", wantProblems: true, why: "an import the module cannot provide, reported once with the go command's reason"},
		{pkg: "badname", wantProblems: true, why: "selector and class names darwinkit does not bind, in objc.Sel, objc.GetClass, objc.GetProtocol and an objc struct tag, and a selector made at run time"},
		{pkg: "argcount", wantProblems: true, why: "selectors sent with more or fewer arguments than colons, and sends whose count cannot be checked"},
		{pkg: "retainlocal", wantProblems: true, why: "objc.Retain of a local variable, a parameter and a field: released at the next garbage collection"},
		{pkg: "nomainmenu", wantProblems: true, why: "an accessory app run without a main menu, so the standard keys do nothing"},
		{pkg: "willopen", wantProblems: true, why: "menu items removed and added in menuWillOpen:, directly, through a helper and through a named callback; menuNeedsUpdate: and a title change are not reported"},
		{pkg: "focusredraw", wantProblems: true, why: "a content view replaced from window-delegate callbacks, directly and through a helper; a key equivalent set in place is not reported"},
		{pkg: "activate", wantProblems: true, why: "the app brought forward only with activateIgnoringOtherApps:, which macOS 26 ignores, and with activate sent where macOS 12 and 13 lack it; asking first and falling back is not reported"},
		{pkg: "offmain", wantProblems: true, why: "AppKit called from goroutines, directly, through the package's own functions, on a global queue, from time.AfterFunc and WaitGroup.Go; the main-queue blocks are not reported"},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			got := byPackage[tt.pkg]
			delete(byPackage, tt.pkg)
			// Checked apart from the golden file, so that a careless
			// -update cannot bless a checker that finds nothing.
			if (got != "") != tt.wantProblems {
				t.Errorf("%s (%s): problems reported = %v, want %v:\n%s", tt.pkg, tt.why, got != "", tt.wantProblems, got)
			}
			golden := filepath.Join("testdata", "golden", tt.pkg+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s (%s): output differs from %s\ngot:\n%s\nwant:\n%s", tt.pkg, tt.why, golden, got, want)
			}
		})
	}
	if len(byPackage) > 0 {
		t.Errorf("problems reported outside the packages under test: %v", byPackage)
	}

	t.Run("good_alone", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), testModule, []string{"./good"}, &stdout, &stderr); code != 0 {
			t.Errorf("exit status %d for ./good, want 0\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
		}
		if stdout.Len() != 0 {
			t.Errorf("a clean check printed:\n%s", &stdout)
		}
	})
}

func TestRunRefusesToRun(t *testing.T) {
	// A module the go command cannot load at all: go list itself fails.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "go.mod"), []byte("module broken\n\ngo not-a-version\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		dir     string
		args    []string
		wantErr string
	}{
		{name: "flag_as_pattern", dir: testModule, args: []string{"./good", "-bogus"}, wantErr: `"-bogus" looks like a flag`},
		{name: "unknown_flag", dir: testModule, args: []string{"-bogus"}, wantErr: "flag provided but not defined"},
		{name: "go_list_fails", dir: broken, args: []string{"./..."}, wantErr: "go list -e -deps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.dir, tt.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (could not run); stderr:\n%s", code, &stderr)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr does not mention %q:\n%s", tt.wantErr, &stderr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout should be empty when the check could not run, got:\n%s", &stdout)
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), testModule, []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit status %d for -h, want 0", code)
	}
	if !strings.Contains(stderr.String(), "usage: darwincheck [packages]") {
		t.Errorf("-h did not print the usage:\n%s", &stderr)
	}
}

func TestParseListPos(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want token.Position
	}{
		{name: "empty", in: "", want: token.Position{}},
		{name: "line_col", in: "a/b.go:6:8", want: token.Position{Filename: "/base/a/b.go", Line: 6, Column: 8}},
		{name: "line_only", in: "a/b.go:6", want: token.Position{Filename: "/base/a/b.go", Line: 6}},
		{name: "absolute", in: "/x/y.go:1:2", want: token.Position{Filename: "/x/y.go", Line: 1, Column: 2}},
		{name: "file_only", in: "a/b.go", want: token.Position{Filename: "/base/a/b.go"}},
		{name: "not_a_number", in: "a/b.go:x", want: token.Position{Filename: "/base/a/b.go:x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseListPos(tt.in, "/base"); got != tt.want {
				t.Errorf("parseListPos(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestDiagnosticString(t *testing.T) {
	tests := []struct {
		name string
		d    diagnostic
		want string
	}{
		{name: "full", d: diagnostic{Pos: token.Position{Filename: "a.go", Line: 3, Column: 4}, Msg: "m"}, want: "a.go:3:4: m"},
		{name: "file_only", d: diagnostic{Pos: token.Position{Filename: "a.go"}, Msg: "m"}, want: "a.go: m"},
		{name: "no_position", d: diagnostic{Msg: "m"}, want: "m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
