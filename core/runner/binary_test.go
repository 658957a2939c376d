package runner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHelperBeside(t *testing.T) {
	have := map[string]bool{
		"/Applications/OpenWorker.app/Contents/Helpers/openworker-runner": true,
		"/Users/me/src/ow/build/openworker-runner":                        true,
	}
	exists := func(p string) bool { return have[p] }
	for _, tc := range []struct{ exe, want string }{
		{"/Applications/OpenWorker.app/Contents/MacOS/openworker", "/Applications/OpenWorker.app/Contents/Helpers/openworker-runner"},
		{"/Users/me/src/ow/build/openworker", "/Users/me/src/ow/build/openworker-runner"},
		{"/usr/local/bin/openworker", "/usr/local/bin/openworker"},
		{"/Other.app/Contents/MacOS/openworker", "/Other.app/Contents/MacOS/openworker"},
	} {
		if got := helperBeside(tc.exe, exists); got != tc.want {
			t.Errorf("helperBeside(%s) = %s, want %s", tc.exe, got, tc.want)
		}
	}
}

// Started through a link on PATH (how the README puts the app's CLI there), the programs
// beside it are found beside what the link points to.
func TestBesideThroughALink(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "OpenWorker.app", "Contents")
	os.MkdirAll(filepath.Join(app, "MacOS"), 0o755)
	os.MkdirAll(filepath.Join(app, "Helpers"), 0o755)
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	for _, f := range []string{"MacOS/openworker", "Helpers/" + HelperName, "Helpers/" + MCPName} {
		os.WriteFile(filepath.Join(app, f), []byte("#!/bin/sh\n"), 0o755)
	}
	link := filepath.Join(dir, "bin", "openworker")
	os.Symlink(filepath.Join(app, "MacOS", "openworker"), link)
	exe := resolved(link)
	if got, want := beside(exe, MCPName, isFile), filepath.Join(app, "Helpers", MCPName); got != want {
		t.Errorf("through %s: %s, want %s", link, got, want)
	}
	if got, want := helperBeside(exe, isFile), filepath.Join(app, "Helpers", HelperName); got != want {
		t.Errorf("through %s: %s, want %s", link, got, want)
	}
}
