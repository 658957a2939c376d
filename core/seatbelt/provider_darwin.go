package seatbelt

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// sessionEndDetail says what ending a session reaches on a Mac, which has no process
// namespace: see process.Kill.
const sessionEndDetail = "ending a session: every process in the runner's session ends with it; a process that made a session of its own (setsid, daemon tools) can outlive it, still behind the wall"

// Status says whether this Mac can run Seatbelt sessions: sandbox-exec is there, and this
// process is not already inside a sandbox of its own (macOS does not nest them, so applying
// even an allow-everything profile fails there).
func (pr *Provider) Status(ctx context.Context) sandbox.Status {
	exe := pr.sandboxExec()
	st := sandbox.Status{Provider: sandbox.Seatbelt, Details: []string{"sandbox-exec: " + exe, sessionEndDetail}}
	if fi, err := os.Stat(exe); err != nil || fi.IsDir() {
		st.Reason = fmt.Sprintf("%s is missing, so no Seatbelt profile can be applied; sessions are refused until it is restored (it ships with macOS)", exe)
		return st
	}
	// A translocated app (or a temporary build) cannot give its sessions a runner.
	if bin, err := runner.Binary(); err == nil {
		if why := runnerPlace(bin); why != "" {
			st.Reason = why
			return st
		}
	}
	out, err := exec.CommandContext(ctx, exe, "-p", "(version 1)\n(allow default)", "/usr/bin/true").CombinedOutput()
	if err != nil {
		st.Reason = fmt.Sprintf("OpenWorker is already running inside another sandbox, and macOS does not nest them: %s could not apply even an allow-everything profile (%s); run OpenWorker outside that sandbox",
			exe, describe(err, out))
		return st
	}
	st.OK = true
	st.Tier = Tier
	return st
}

// Check runs /usr/bin/true under the profile a session gets: a fresh private folder as its
// writable folder and private tmp, this machine's home and system paths, this binary as the
// runner, and allowlist network to a loopback port held for the check.
func (pr *Provider) Check(ctx context.Context) sandbox.Status {
	if st := pr.Status(ctx); !st.OK {
		return st
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return failed(fmt.Sprintf("the home folder is not known (%v); set HOME", err))
	}
	tmp, err := os.MkdirTemp(TmpRoot, "openworker-check-")
	if err != nil {
		return failed(fmt.Sprintf("creating a private folder for the check: %v", err))
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return failed(fmt.Sprintf("creating a private folder for the check: %v", err))
	}
	// Hold a loopback port, as the egress proxy would, so the profile names a real one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return failed(fmt.Sprintf("holding a loopback port for the check: %v", err))
	}
	defer ln.Close()
	var runnerFiles []string
	if bin, err := runner.Binary(); err == nil {
		runnerFiles = append(runnerFiles, bin)
	}
	p, err := policy.New(policy.Options{
		Writable:    []string{work},
		PrivateTmp:  tmp,
		UserHome:    home,
		GOOS:        "darwin",
		RunnerFiles: runnerFiles,
		Network:     policy.Allowlist,
		ProxyPort:   ln.Addr().(*net.TCPAddr).Port,
	})
	if err != nil {
		return failed(fmt.Sprintf("building the check's policy: %v", err))
	}
	return pr.CheckPolicy(ctx, p)
}

// CheckPolicy runs /usr/bin/true under the profile rendered from p.
func (pr *Provider) CheckPolicy(ctx context.Context, p *policy.Policy) sandbox.Status {
	prof, err := Render(p)
	if err != nil {
		return failed(err.Error())
	}
	exe := pr.sandboxExec()
	args := append(prof.Args(), "/usr/bin/true")
	out, err := exec.CommandContext(ctx, exe, args...).CombinedOutput()
	if err != nil {
		return failed(fmt.Sprintf("/usr/bin/true did not run under the session's profile (%s); run `openworker sandbox profile` and report the output", describe(err, out)))
	}
	return sandbox.Status{Provider: sandbox.Seatbelt, OK: true, Tier: Tier, Details: []string{"sandbox-exec: " + exe, sessionEndDetail}}
}

// Start renders p, then starts sandbox-exec with the profile and its parameters, which applies
// it and executes the runner; the runner, and everything it starts, stays under it.
func (pr *Provider) Start(ctx context.Context, p *policy.Policy, spec sandbox.RunnerSpec) (sandbox.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prof, err := RenderWith(p, Options{LinkChecks: LoadLinkChecks(pr.StateDir, osVersion())})
	if err != nil {
		return nil, err
	}
	args := append(prof.Args(), spec.Path)
	args = append(args, spec.Args...)
	return launch(pr.sandboxExec(), args, spec, []string{"seatbelt profile (deny default)", "process group"})
}

func failed(reason string) sandbox.Status {
	return sandbox.Status{Provider: sandbox.Seatbelt, Reason: reason}
}

func describe(err error, out []byte) string {
	if s := strings.TrimSpace(string(bytes.TrimSpace(out))); s != "" {
		return fmt.Sprintf("%v: %s", err, s)
	}
	return err.Error()
}
