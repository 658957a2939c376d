package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/wallcheck"
)

// runBattery runs the wall check's battery of real programs in a session of m behind
// native's wall, as a session gets it (a fresh writable folder, work, allowlist network with
// an empty list), and prints one line per program, or JSON. holds is false when an escape
// got through.
func runBattery(ctx context.Context, e *env, m *session.Manager, native sandbox.Provider, work string, asJSON bool) (holds bool, err error) {
	if err := os.Mkdir(work, 0o700); err != nil {
		return false, fmt.Errorf("creating a folder for the check: %w", err)
	}
	if work, err = filepath.EvalSymlinks(work); err != nil {
		return false, err
	}
	// A listener outside the wall on the host's loopback, which the direct-connection probe
	// must not reach: nothing is ever sent to any other address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false, fmt.Errorf("holding a loopback port for the check: %w", err)
	}
	defer ln.Close()
	var reached atomic.Bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Store(true)
			c.Close()
		}
	}()
	// On a Mac, prove which ends of a link and a clone Seatbelt checks before the session
	// starts, so that its profile (and every later session's) follows the answer.
	var links []wallcheck.Result
	if lp, ok := native.(interface {
		ProbeLinks(context.Context) (seatbelt.LinkChecks, string, error)
	}); ok {
		links = append(links, linkProbeResult(lp.ProbeLinks(ctx)))
	}
	s, err := m.Start(ctx, session.Spec{Provider: native.Name(), Writable: []string{work}, Network: policy.Allowlist,
		GitMetadataWritable: e.settings.GitMetadata == config.GitMetadataWritable})
	if err != nil {
		return false, fmt.Errorf("starting a session for the check: %w", err)
	}
	defer s.EndBecause("the wall check finished")
	run := func(ctx context.Context, cmd string) (wallcheck.Outcome, error) {
		if err := ctx.Err(); err != nil {
			return wallcheck.Outcome{}, err
		}
		res, err := s.Exec(runner.ExecArgs{Command: cmd, Timeout: time.Minute}, nil)
		if err != nil {
			return wallcheck.Outcome{}, err
		}
		if res.Error != "" {
			return wallcheck.Outcome{ExitCode: -1, Stderr: res.Error}, nil
		}
		return wallcheck.Outcome{ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr), Denials: res.Denials}, nil
	}
	probes := wallcheck.Battery(wallcheck.Options{
		GOOS: runtime.GOOS, UserHome: e.home,
		DirectPort: ln.Addr().(*net.TCPAddr).Port, Reached: reached.Load,
		// Seatbelt reports each command's denials: a refusal without one means the log's
		// window did not close in order, which the first run on a Mac must show.
		ReportsDenials: native.Name() == sandbox.Seatbelt,
		// This very process: its command line must not be readable from inside.
		OutsidePID: os.Getpid(), OutsideArg: "sandbox check",
		// The check's session keeps repository metadata as the machine's sessions do.
		GitMetadataProtected: e.settings.GitMetadata != config.GitMetadataWritable,
	})
	rs := append(wallcheck.Run(ctx, run, probes, exec.LookPath), links...)
	if asJSON {
		return wallcheck.Holds(rs), wallcheck.PrintJSON(os.Stdout, string(native.Name()), rs)
	}
	wallcheck.Print(os.Stdout, rs)
	if a := batteryAdvice(rs, runtime.GOOS); a != "" {
		fmt.Println(a)
	}
	return wallcheck.Holds(rs), nil
}

// batteryAdvice is what a battery that found something asks the person to do, naming what
// describes the wall on goos: the Seatbelt profile on a Mac, the wall's layers on Linux.
func batteryAdvice(rs []wallcheck.Result, goos string) string {
	describe := "openworker machine sandbox status"
	if goos == "darwin" {
		describe = "openworker sandbox profile"
	}
	switch {
	case !wallcheck.Holds(rs):
		return "The wall let an escape through: do not run sessions on this machine until it is fixed; run `" + describe + "` and report both outputs."
	case !wallcheck.OK(rs):
		return "Sessions run, but the programs marked broken fail behind the wall; report this output with that of `" + describe + "`."
	}
	return ""
}

// linkProbeResult is the battery's line for the link probe: proved lets sessions link and
// clone within their folders (npm install, cargo build); not proved keeps both denied.
func linkProbeResult(answer seatbelt.LinkChecks, why string, err error) wallcheck.Result {
	r := wallcheck.Result{Name: "links and clones: which ends Seatbelt checks", Command: "ln and cp -c under a test profile", OK: true}
	switch {
	case err != nil:
		r.Status = "not proved: " + err.Error()
	case answer == seatbelt.LinkChecksBoth:
		r.Status = "both ends: links and clones within the session's folders are allowed"
	default:
		r.Status = "not proved (" + why + "): links and clones stay denied, so npm install and cargo build fail"
	}
	return r
}
