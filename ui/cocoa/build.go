package cocoa

import (
	"errors"
	"fmt"
	"go/version"
	"runtime/debug"
	"slices"
	"strings"
)

// darwinkitPackage is one of darwinkit's packages that the libffi defect is in: a -gcflags
// pattern must reach it.
const darwinkitPackage = "github.com/progrium/darwinkit/objc"

// CheckBuild refuses a menu-bar app built in a way that crashes at its first Cocoa callback:
// Go 1.25 or later without darwinkit's packages compiled with -N (no optimisation).
// darwinkit v0.5.0's libffi bridge keeps a pointer into a slice that Go 1.25 allocates on
// the stack. Its users report -N as working (progrium/darwinkit#286); -d=variablemakehash=n
// turns off just that allocation, but nobody has reported running with it, so it is not
// accepted alone. -N must apply to darwinkit's packages: a bare -gcflags=... applies only to
// the main package. bi and ok are what runtime/debug.ReadBuildInfo returned.
func CheckBuild(bi *debug.BuildInfo, ok bool) error {
	if !ok || bi == nil {
		return errors.New("this openworker cannot read its own build information, so it cannot tell whether it was built to run the menu-bar app safely; build the app with ./build.sh app")
	}
	lang := version.Lang(bi.GoVersion)
	if lang != "" && version.Compare(lang, "go1.25") < 0 {
		return nil // the stack allocation darwinkit trips over came with Go 1.25
	}
	for _, s := range bi.Settings {
		if s.Key == "-gcflags" && gcflagsFixDarwinkit(s.Value) {
			return nil
		}
	}
	return fmt.Errorf("this openworker was built with %s without -gcflags='github.com/progrium/darwinkit/...=-N -l', and darwinkit v0.5.0 then crashes the menu-bar app at its first Cocoa callback; build the app with ./build.sh app", bi.GoVersion)
}

// gcflagsFixDarwinkit reports whether a -gcflags value, as the go command records it in the
// build information ("[pattern=]flags"), gives darwinkit's packages -N.
func gcflagsFixDarwinkit(value string) bool {
	pattern, flags := "", value
	// As the go command parses it: a value that starts with "-" has no pattern.
	if !strings.HasPrefix(value, "-") {
		var found bool
		pattern, flags, found = strings.Cut(value, "=")
		if !found {
			return false
		}
	}
	if pattern == "" {
		return false // no pattern: the flags apply only to the main package, not darwinkit
	}
	if !matchPattern(pattern, darwinkitPackage) {
		return false
	}
	return slices.Contains(strings.Fields(flags), "-N")
}

// matchPattern is the go command's package pattern match for the patterns a -gcflags value
// may carry: "all", an import path, or one with "..." wildcards.
func matchPattern(pattern, pkg string) bool {
	switch pattern {
	case "all":
		return true
	case "std", "cmd":
		return false
	}
	if !strings.Contains(pattern, "...") {
		return pattern == pkg
	}
	// "x/..." also matches "x" itself, as in the go command.
	if strings.HasSuffix(pattern, "/...") && pkg == strings.TrimSuffix(pattern, "/...") {
		return true
	}
	glob := strings.ReplaceAll(pattern, "...", "\x00")
	return globMatch(glob, pkg)
}

// globMatch matches s against pattern, where NUL stands for any string (the go command's
// "...", which, unlike path.Match's "*", crosses slashes).
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "\x00")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}
