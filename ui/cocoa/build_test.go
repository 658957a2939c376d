package cocoa

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCheckBuild(t *testing.T) {
	info := func(goVersion string, gcflags ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: goVersion}
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "-trimpath", Value: "true"})
		for _, g := range gcflags {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "-gcflags", Value: g})
		}
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "CGO_ENABLED", Value: "1"})
		return bi
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want bool // the app may start
	}{
		{name: "no_optimisation", bi: info("go1.26.8", "github.com/progrium/darwinkit/...=-N -l"), ok: true, want: true},
		{name: "all_packages", bi: info("go1.26.8", "all=-N -l"), ok: true, want: true},
		{name: "n_alone", bi: info("go1.25.0", "github.com/progrium/darwinkit/objc=-N"), ok: true, want: true},
		{name: "older_go_needs_nothing", bi: info("go1.24.6"), ok: true, want: true},

		{name: "plain_go_build", bi: info("go1.26.8"), ok: true, want: false},
		// Turning off only the variable-size stack allocation targets the right slice, but
		// nobody has reported it working, while -N is reported working by darwinkit's users.
		{name: "variablemakehash_only", bi: info("go1.26.8", "github.com/progrium/darwinkit/...=-d=variablemakehash=qn"), ok: true, want: false},
		{name: "variablemakehash_loud", bi: info("go1.25.0", "all=-d=variablemakehash=n"), ok: true, want: false},
		// Without a pattern the flags reach only the main package, not darwinkit.
		{name: "no_pattern", bi: info("go1.26.8", "-N -l"), ok: true, want: false},
		{name: "other_package", bi: info("go1.26.8", "github.com/openworker/...=-N -l"), ok: true, want: false},
		{name: "only_appkit", bi: info("go1.26.8", "github.com/progrium/darwinkit/macos/...=-N -l"), ok: true, want: false},
		{name: "inlining_only", bi: info("go1.26.8", "all=-l"), ok: true, want: false},
		{name: "std_only", bi: info("go1.26.8", "std=-N"), ok: true, want: false},
		{name: "devel_go", bi: info("devel go1.27-abcdef"), ok: true, want: false},
		{name: "no_build_info", bi: nil, ok: false, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBuild(tt.bi, tt.ok)
			if (err == nil) != tt.want {
				t.Fatalf("CheckBuild = %v, want the app to start: %v", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), "./build.sh app") {
				t.Errorf("the refusal does not say how to build the app: %v", err)
			}
		})
	}
}

// build.sh is what builds the app: the guard must accept the setting it gives darwinkit, or
// every app it builds refuses to start.
func TestCheckBuildAcceptsBuildSh(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^readonly darwinkit_gcflags='([^']*)'$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("build.sh has no line readonly darwinkit_gcflags='...'")
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "-gcflags", Value: string(m[1])}}}
	if err := CheckBuild(bi, true); err != nil {
		t.Errorf("an app built by build.sh with -gcflags=%s is refused: %v", m[1], err)
	}
}

// The test binary itself is built without darwinkit's setting (go test passes no -gcflags
// here), so the check run on real build information must refuse it.
func TestCheckBuildOwnBinary(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	for _, s := range bi.Settings {
		if s.Key == "-gcflags" {
			t.Skipf("go test was given -gcflags=%s", s.Value)
		}
	}
	if err := CheckBuild(bi, ok); err == nil {
		t.Errorf("a binary built with %s without the darwinkit setting was accepted", bi.GoVersion)
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern string
		want    bool
	}{
		{"all", true},
		{"github.com/progrium/darwinkit/...", true},
		{"github.com/progrium/...", true},
		{"github.com/.../objc", true},
		{"github.com/progrium/darwinkit/objc", true},
		{"github.com/progrium/darwinkit", false},
		{"github.com/progrium/darwinkit/objc/...", true},
		{"github.com/progrium/darwinkit/macos/...", false},
		{"std", false},
	}
	for _, tt := range tests {
		if got := matchPattern(tt.pattern, darwinkitPackage); got != tt.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tt.pattern, darwinkitPackage, got, tt.want)
		}
	}
}
