package seatbelt

import (
	"strings"
	"sync"

	"github.com/openworker/openworker/core/policy"

	"github.com/openworker/openworker/core/sandbox"
)

// Tier is what `openworker sandbox check` prints when Seatbelt sessions can run.
const Tier = "tier 1 (seatbelt)"

// DefaultSandboxExec is macOS's tool that applies a profile and then runs a command.
const DefaultSandboxExec = "/usr/bin/sandbox-exec"

// TmpRoot is where a Mac's private folders for sessions and checks go: /private/tmp, never
// the per-user folder under /private/var/folders that TMPDIR names, whose folders xcrun would
// then find inside and write its cache in (see xcrunCache).
const TmpRoot = "/private/tmp"

// Provider starts the tool runner under a Seatbelt profile rendered from the session's policy.
// The zero value is ready to use.
type Provider struct {
	// SandboxExec is the sandbox-exec binary; empty means DefaultSandboxExec.
	SandboxExec string
	// StateDir is the state folder, where the link probe's answer is kept (LoadLinkChecks);
	// empty renders every profile with links and clones denied.
	StateDir string

	followMu sync.Mutex   // guards follower
	follower *LogFollower // the denials' log stream, made at first use
}

// UseStateDir tells the provider the state folder; a session manager calls it once, before
// any session starts.
func (pr *Provider) UseStateDir(dir string) { pr.StateDir = dir }

var (
	_ sandbox.Provider       = (*Provider)(nil)
	_ sandbox.DenialReporter = (*Provider)(nil)
	_ sandbox.LinkRefuser    = (*Provider)(nil)
)

// Name is the enforcement word every result of a Seatbelt session carries.
func (*Provider) Name() sandbox.Enforcement { return sandbox.Seatbelt }

func (pr *Provider) sandboxExec() string {
	if pr.SandboxExec != "" {
		return pr.SandboxExec
	}
	return DefaultSandboxExec
}

// runnerPlace says why a session's runner may not start from bin, or "": a binary under
// /private/var/folders would put the person's per-user temporary folders on the way to a
// readable path, so that xcrun's confstr finds them inside and its cache moves into the
// person's own (see xcrunCache). An app opened where it was downloaded or unzipped runs from
// such a place (App Translocation), and so does a program `go run` built.
func runnerPlace(bin string) string {
	if !policy.Within(varFolders, bin) {
		return ""
	}
	if strings.Contains(bin, "/AppTranslocation/") {
		return "macOS runs this copy of OpenWorker from a temporary place under " + varFolders + " (App Translocation), because it was opened " +
			"where it was downloaded or unzipped, and a session's runner there would open your temporary folders to the sandbox: " +
			"move OpenWorker.app to /Applications (drag it there in Finder) and open it from there"
	}
	return "OpenWorker runs from " + bin + ", in " + varFolders + ", a per-user temporary folder (a program go run built, say), and a session's runner " +
		"there would open your temporary folders to the sandbox: build it with ./build.sh cli (or move OpenWorker.app to /Applications) and run it from there"
}
