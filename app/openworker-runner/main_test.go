package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The helper is what starts inside the wall for every session and every ssh connection: it
// must build for macOS without cgo and link none of the app (no darwinkit, no UI, no MCP,
// no settings parser), only the runner and the ProxyCommand.
func TestHelperIsSmallAndCgoFree(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, arch := range []string{"arm64", "amd64"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", ".")
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list for darwin/%s: %v\n%s", arch, err, out)
		}
		allowed := []string{
			"github.com/openworker/openworker/app/openworker-runner",
			"github.com/openworker/openworker/core/runner",
			"github.com/openworker/openworker/core/credentials/connect",
			"github.com/openworker/openworker/core/internal/wire",
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, cgo, _ := strings.Cut(line, " ")
			if cgo != "0" {
				t.Errorf("darwin/%s: %s has cgo files", arch, pkg)
			}
			// The standard library (and what it vendors) is not the app's: only modules are.
			module := strings.Contains(strings.SplitN(pkg, "/", 2)[0], ".")
			if module && !strings.HasPrefix(pkg, "golang.org/x/sys/") && !slices.Contains(allowed, pkg) {
				t.Errorf("darwin/%s: the helper links %s", arch, pkg)
			}
		}
		build := exec.Command("go", "build", "-o", os.DevNull, ".")
		build.Env = cmd.Env
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the helper for darwin/%s without cgo: %v\n%s", arch, err, out)
		}
	}
}
