package seatbelt

import (
	"sync"

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
