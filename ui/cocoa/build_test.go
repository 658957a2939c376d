package cocoa

import (
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
		{name: "build_sh", bi: info("go1.26.8", "github.com/progrium/darwinkit/...=-d=variablemakehash=qn"), ok: true, want: true},
		{name: "loud_n", bi: info("go1.25.0", "github.com/progrium/darwinkit/...=-d=variablemakehash=n"), ok: true, want: true},
		{name: "all_packages", bi: info("go1.26.8", "all=-d=variablemakehash=qn"), ok: true, want: true},
		{name: "no_optimisation", bi: info("go1.26.8", "all=-N -l"), ok: true, want: true},
		{name: "with_other_debug_flags", bi: info("go1.26.8", "github.com/progrium/...=-d=checkptr=0,variablemakehash=qn"), ok: true, want: true},
		{name: "d_as_two_fields", bi: info("go1.26.8", "github.com/progrium/darwinkit/objc=-d variablemakehash=n"), ok: true, want: true},
		{name: "older_go_needs_nothing", bi: info("go1.24.6"), ok: true, want: true},

		{name: "plain_go_build", bi: info("go1.26.8"), ok: true, want: false},
		// Without a pattern the flags reach only the main package, not darwinkit.
		{name: "no_pattern", bi: info("go1.26.8", "-d=variablemakehash=qn"), ok: true, want: false},
		{name: "other_package", bi: info("go1.26.8", "github.com/openworker/...=-d=variablemakehash=qn"), ok: true, want: false},
		{name: "only_appkit", bi: info("go1.26.8", "github.com/progrium/darwinkit/macos/...=-d=variablemakehash=qn"), ok: true, want: false},
		{name: "hash_on", bi: info("go1.26.8", "all=-d=variablemakehash=y"), ok: true, want: false},
		{name: "other_debug_flag", bi: info("go1.26.8", "all=-d=checkptr=0"), ok: true, want: false},
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
