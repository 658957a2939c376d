package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/openworker/openworker/core/caches"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/wallcheck"
)

// runBattery runs the wall check's battery of real programs in a session of m behind
// native's wall, as a session gets it (a fresh writable folder, work, allowlist network with
// only the check's own registry on its list), and returns one result per program.
func runBattery(ctx context.Context, e *env, m *session.Manager, native sandbox.Provider, work string) (rs []wallcheck.Result, err error) {
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, fmt.Errorf("creating a folder for the check: %w", err)
	}
	if work, err = filepath.EvalSymlinks(work); err != nil {
		return nil, err
	}
	// A listener outside the wall on the host's loopback, which the direct-connection probe
	// must not reach: nothing is ever sent to any other address.
	ln, err := sandbox.ListenOutside(nil)
	if err != nil {
		return nil, fmt.Errorf("holding a loopback port for the check: %w", err)
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
		ProbeLinks(context.Context) (seatbelt.LinkAnswer, error)
	}); ok {
		links = append(links, linkProbeResult(lp.ProbeLinks(ctx)))
	}
	// A tiny npm registry outside the wall, on loopback: the session's allow list names it,
	// as a person's --allow 127.0.0.1:PORT would, so npm install is proved with no internet.
	reg, err := wallcheck.ServeRegistry()
	if err != nil {
		return nil, fmt.Errorf("serving the check's npm registry on loopback: %w", err)
	}
	defer reg.Close()
	regEntry, err := hosts.Parse("127.0.0.1:" + strconv.Itoa(reg.Port))
	if err != nil {
		return nil, err
	}
	// The check's session is a session as the machine's are: its toolchains switched on
	// (cargo through rustup needs ~/.rustup), its repository metadata kept as they keep it,
	// its tools' caches kept for its folder and the person's read as theirs are (npm's cache
	// and cargo's home are then the kept ones). Its folder is the check's own: what it kept
	// is cleared once it is done.
	spec := session.Spec{Provider: native.Name(), Writable: []string{work}, Network: policy.Allowlist,
		SessionHosts: []hosts.Entry{regEntry}, Toolchains: e.settings.Toolchains,
		GitMetadataWritable: e.settings.GitMetadata == config.GitMetadataWritable,
		Caches:              session.CacheSpec{Keep: e.settings.MaxCaches, Host: e.settings.HostCaches != config.HostCachesOff}}
	defer caches.NewStore(e.stateDir).Clear(caches.Key([]string{work}))
	s, err := m.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("starting a session for the check: %w", err)
	}
	defer s.EndBecause("the wall check finished")
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
		RegistryPort:         reg.Port,
		JavaMissing:          javaMissing,
		RosettaMissing:       rosettaMissing,
	})
	// A program that fails inside is tried outside too, in a folder of the check's own: the
	// wall is blamed only for one that works there.
	outside := wallcheck.Outside{LookPath: exec.LookPath, Exec: wallcheck.ExecOutside(filepath.Join(filepath.Dir(work), "outside"), os.Environ()),
		Advice: func(dir string) string { return session.ToolchainAdvice(dir, e.home, runtime.GOOS) }}
	rs = wallcheck.Run(ctx, checkExec(s), probes, outside)
	// What a command left running in the background, in a group of its own and deaf to
	// SIGTERM, must end with the session: on a Mac, which has no process namespace, only the
	// sweep of the runner's session reaches it.
	left := wallcheck.Run(ctx, checkExec(s), []wallcheck.Probe{wallcheck.LeftRunningProbe()}, wallcheck.Outside{LookPath: exec.LookPath})[0]
	s.EndBecause("the wall check finished")
	rs = append(rs, wallcheck.AfterEnd(left, work, 5*time.Second))
	// The same session's servers with the local-servers switch on, in a second session: on a
	// Mac the switch is what lets them bind; on Linux it publishes their ports on this
	// machine's loopback, and they bind as without it.
	spec.LocalServers = true
	if ls, err := m.Start(ctx, spec); err != nil {
		for _, p := range wallcheck.LocalServerProbes() {
			rs = append(rs, wallcheck.Result{Name: p.Name, Command: p.Command, Status: wallcheck.Failed,
				Detail: "starting a session with local servers on: " + err.Error()})
		}
	} else {
		rs = append(rs, wallcheck.Run(ctx, checkExec(ls), wallcheck.LocalServerProbes(), outside)...)
		ls.EndBecause("the wall check finished")
	}
	return append(rs, links...), nil
}

// printBattery prints the battery's results, one line per program, and what to do.
func printBattery(rs []wallcheck.Result) {
	wallcheck.Print(os.Stdout, rs)
	if a := batteryAdvice(rs, runtime.GOOS); a != "" {
		fmt.Println(a)
	}
}

// writeReport writes the check's report, for a person to send, to path (owner-only): the
// system, the sandbox's line and the battery's results.
func writeReport(path string, e *env, native sandbox.Provider, sandboxLine string, rs []wallcheck.Result) error {
	var b bytes.Buffer
	err := wallcheck.WriteReport(&b, wallcheck.Report{
		Version: version, System: systemName(), Arch: runtime.GOARCH, Enforcement: string(native.Name()),
		Sandbox: sandboxLine, Home: e.home, Results: rs, ReportsDenials: native.Name() == sandbox.Seatbelt,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing the check's report: %w", err)
	}
	return nil
}

// checkExec runs the battery's commands in s, each stopped after a minute.
func checkExec(s *session.Session) wallcheck.Exec {
	return func(ctx context.Context, cmd string) (wallcheck.Outcome, error) {
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
// clone within their folders (npm install, cargo build); not proved keeps both refused, with
// npm's links made copies and cargo failing. Each of the probe's attempts goes into the
// report as it went.
func linkProbeResult(a seatbelt.LinkAnswer, err error) wallcheck.Result {
	r := wallcheck.Result{Name: "links and clones: which ends Seatbelt checks", Command: "ln and cp -c under a test profile", OK: true}
	for _, lr := range a.Results {
		r.Raw = append(r.Raw, lr.String())
	}
	switch {
	case err != nil:
		r.Status = "not proved: " + err.Error() + "; " + linksRefused
	case a.Checks == seatbelt.LinkChecksBoth:
		r.Status = "both ends: links and clones within the session's folders are allowed"
	default:
		r.Status = "not proved (" + a.Why + "): " + linksRefused
	}
	return r
}

// linksRefused is what sessions on a Mac the link probe has not proved get.
const linksRefused = "links and clones stay refused; npm's links are made copies, and cargo build, rustup and Rust's fs::copy fail"
