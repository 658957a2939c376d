package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientProgramsAreGuarded: the program of the client that asked for a session (a
// build folder's, or an app bundle's that an agent host starts) is guarded against writing
// as the runner's own is, and is not shown inside.
func TestClientProgramsAreGuarded(t *testing.T) {
	f := newFixture(t)
	build := filepath.Join(f.root, "build")
	bundle := filepath.Join(f.root, "Applications", "OpenWorker.app")
	for _, d := range []string{build, filepath.Join(bundle, "Contents", "MacOS"), filepath.Join(bundle, "Contents", "Resources")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	client, app := filepath.Join(build, "openworker"), filepath.Join(bundle, "Contents", "MacOS", "openworker")
	for _, p := range []string{client, app} {
		must(t, os.WriteFile(p, nil, 0o755))
	}
	base := Options{UserHome: f.home, StateDir: f.state, GOOS: "linux", Programs: []string{client, app}}
	for _, tt := range []struct{ name, rw, want string }{
		{"build_folder", build, "contains the program of the client that asked for this session " + client},
		{"bundle_resources", filepath.Join(bundle, "Contents", "Resources"), "lies inside OpenWorker's app " + bundle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			opts.Writable = []string{tt.rw}
			if _, err := New(opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			opts.Writable, opts.ReadOnly = nil, []string{tt.rw}
			p, err := New(opts)
			if err != nil {
				t.Fatalf("read-only: %v", err)
			}
			if len(p.RunnerFiles) != 0 {
				t.Errorf("the client's program is shown inside: %q", p.RunnerFiles)
			}
		})
	}
}
