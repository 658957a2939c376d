package backend

import (
	"strings"
	"testing"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

// Repository metadata is protected unless the settings or the request say writable, and the
// request's word wins over the settings'.
func TestSpecForGitMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, settings, flag string
		want                 bool
		err                  string
	}{
		{"default", config.GitMetadataProtected, "", false, ""},
		{"settings_writable", config.GitMetadataWritable, "", true, ""},
		{"flag_writable", config.GitMetadataProtected, "writable", true, ""},
		{"flag_protected", config.GitMetadataWritable, "protected", false, ""},
		{"flag_unknown", config.GitMetadataProtected, "open", false, `--git-metadata "open" is not a choice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := config.Default()
			s.GitMetadata = tc.settings
			m := Machine{Settings: &config.InForce{Settings: s}, Native: sandbox.Linux, GOOS: "linux"}
			spec, err := SpecFor(m, Request{Provider: ProviderAuto, Writable: []string{"/p"}, GitMetadata: tc.flag})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.GitMetadataWritable != tc.want {
				t.Errorf("GitMetadataWritable = %v, want %v", spec.GitMetadataWritable, tc.want)
			}
		})
	}
}

// The settings say what a session keeps and reads of caches; --fresh-caches starts one cold
// whatever they say.
func TestSpecForCaches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int64
		host  string
		fresh bool
		want  session.CacheSpec
	}{
		{"default", config.DefaultMaxCaches, config.HostCachesReadOnly, false, session.CacheSpec{Keep: config.DefaultMaxCaches, Host: true}},
		{"none_kept", 0, config.HostCachesReadOnly, false, session.CacheSpec{Host: true}},
		{"host_off", 1 << 30, config.HostCachesOff, false, session.CacheSpec{Keep: 1 << 30}},
		{"fresh", config.DefaultMaxCaches, config.HostCachesReadOnly, true, session.CacheSpec{Keep: config.DefaultMaxCaches, Host: true, Fresh: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := config.Default()
			s.MaxCaches, s.HostCaches = tc.max, tc.host
			m := Machine{Settings: &config.InForce{Settings: s}, Native: sandbox.Linux, GOOS: "linux"}
			spec, err := SpecFor(m, Request{Provider: ProviderAuto, Writable: []string{"/p"}, FreshCaches: tc.fresh})
			if err != nil {
				t.Fatal(err)
			}
			if spec.Caches != tc.want {
				t.Errorf("Caches = %+v, want %+v", spec.Caches, tc.want)
			}
		})
	}
}
