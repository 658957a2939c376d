package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The helper is what starts inside the wall for every session and every ssh connection: it
// must build without cgo and link none of the app (no darwinkit, no UI, no MCP, no settings
// parser), only the runner, the ProxyCommand and, on Linux, the wall builder.
func TestHelperIsSmallAndCgoFree(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, target := range []string{"darwin/arm64", "darwin/amd64", "linux/amd64", "linux/arm64"} {
		goos, arch, _ := strings.Cut(target, "/")
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+arch, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list for %s: %v\n%s", target, err, out)
		}
		allowed := []string{
			"github.com/openworker/openworker/app/openworker-runner",
			"github.com/openworker/openworker/core/runner",
			"github.com/openworker/openworker/core/credentials/connect",
			"github.com/openworker/openworker/core/internal/wire",
			"github.com/openworker/openworker/core/internal/randbytes",
		}
		if goos == "linux" {
			// The wall builder: the wall itself, and the policy it is built from.
			allowed = append(allowed,
				"github.com/openworker/openworker/core/linux",
				"github.com/openworker/openworker/core/policy",
				"github.com/openworker/openworker/core/sandbox",
				// What git obeys, which the policy reads to keep it out of writable folders:
				// the standard library only, and dead code in the helper.
				"github.com/openworker/openworker/core/gitmeta",
				"kernel.org/pub/linux/libs/security/libcap/psx",
				"github.com/landlock-lsm/go-landlock/landlock",
				"github.com/landlock-lsm/go-landlock/landlock/internal",
				"github.com/landlock-lsm/go-landlock/landlock/syscall",
				// The sandbox's own network: the rules that send its connections to the
				// relay, made over netlink inside it.
				"golang.org/x/net/bpf",
				"golang.org/x/sync/errgroup",
			)
		}
		linuxModules := []string{"github.com/google/nftables", "github.com/mdlayher/netlink", "github.com/mdlayher/socket"}
		inLinuxModule := func(pkg string) bool {
			return goos == "linux" && slices.ContainsFunc(linuxModules, func(m string) bool { return pkg == m || strings.HasPrefix(pkg, m+"/") })
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, cgo, _ := strings.Cut(line, " ")
			if cgo != "0" {
				t.Errorf("%s: %s has cgo files", target, pkg)
			}
			// The standard library (and what it vendors) is not the app's: only modules are.
			// Nothing inside speaks HTTP beyond one CONNECT, nor TLS: the standard library's
			// HTTP stack and its crypto are a fifth of the binary and a sixth of every start.
			// On Linux no crypto at all: random bytes come from getrandom.
			if pkg == "net/http" || pkg == "crypto/tls" || (goos == "linux" && strings.HasPrefix(pkg, "crypto")) {
				t.Errorf("%s: the helper links %s", target, pkg)
			}
			module := strings.Contains(strings.SplitN(pkg, "/", 2)[0], ".")
			if module && !strings.HasPrefix(pkg, "golang.org/x/sys/") && !slices.Contains(allowed, pkg) && !inLinuxModule(pkg) {
				t.Errorf("%s: the helper links %s", target, pkg)
			}
		}
		build := exec.Command("go", "build", "-o", os.DevNull, ".")
		build.Env = cmd.Env
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the helper for %s without cgo: %v\n%s", target, err, out)
		}
	}
}
