package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
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

const sandboxUsage = `Usage:
  openworker sandbox check [--json] [--report FILE]
                               run true, then a battery of real programs, behind the same wall a
                               session gets, and say for each whether it worked
  openworker sandbox profile [--rw DIR]… [--ro DIR]… [--network allowlist|open|none] [--proxy-port N]
                               print the Seatbelt profile and parameters a session would get (on any OS)

Example:
  openworker sandbox check
  openworker sandbox profile --rw . --ro ../data
`

var sandboxGroup = group{name: "sandbox", usage: sandboxUsage, subs: "check or profile"}

var sandboxCheckCommand = command{
	name:     "sandbox check",
	synopsis: "sandbox check [--json] [--report FILE]",
	about:    "Proves the sandbox works on this machine: builds the wall a session gets and runs true behind it, then a battery of real programs (a shell with a here-document, ls, env, git, python3 and node where installed, a write and a read; java -version, cargo build of a one-file crate and npm install from a registry the check serves on loopback, where installed; a server on loopback with the session's local servers off and on, and whether a process a command left running in the background ended with the session) and what must be refused (a login file, a direct connection, another process's command line). Prints Sandbox: tier 1 (…) and one line per program. Exits 1 when the wall cannot run or let an escape through; a program the wall breaks is named, and the check still exits 0. A program that fails inside is tried outside too: one that fails there as well is skipped, saying so, and one found only where sessions do not see it is skipped with the setting that makes it readable. --report FILE writes the same lines, the system and every denial seen, for a bug report (home folder as ~, no file contents, no environment values); what Seatbelt allows, and which of its denials the log shows, only a run on a Mac can tell.",
	example:  "openworker sandbox check\nopenworker sandbox check --json\nopenworker sandbox check --report check.txt",
}

var sandboxProfileCommand = command{
	name:     "sandbox profile",
	synopsis: "sandbox profile [--rw DIR]… [--ro DIR]… [--network allowlist|open|none] [--proxy-port N] [--allow HOST[:PORT]]… [--local-servers] [--link-checks unknown|both]",
	about:    "Prints the Seatbelt profile and its parameters that a session with these folders would get on a Mac. It works on any OS, for review.",
	example:  "openworker sandbox profile --rw . --ro ../data",
}

func cmdSandbox(args []string) error {
	if ok, err := sandboxGroup.help(args); !ok {
		return err
	}
	switch args[0] {
	case "check":
		return sandboxCheck(args[1:])
	case "profile":
		return sandboxProfile(args[1:])
	}
	return sandboxGroup.unknown(args[0])
}

// checker is a provider that can prove its wall by running a trivial command behind it.
type checker interface {
	Check(ctx context.Context) sandbox.Status
}

// prove says whether p can run sessions here: by running true behind its wall where it can
// (its Check includes its Status), by its Status otherwise.
func prove(ctx context.Context, p sandbox.Provider) sandbox.Status {
	if c, ok := p.(checker); ok {
		return c.Check(ctx)
	}
	return p.Status(ctx)
}

func sandboxCheck(args []string) error {
	fs := newFlags(sandboxCheckCommand)
	asJSON := fs.Bool("json", false, "print the result as JSON, for scripts")
	report := fs.String("report", "", "also write a report to this file, for a bug report: the system, each program's line and the denials seen (no file contents, no environment values; the home folder written ~)")
	if _, _, err := parse(fs, sandboxCheckCommand, args); err != nil {
		return err
	}
	p := nativeProvider()
	if p == nil {
		fmt.Println("Sandbox: none on this OS; commands can only run direct")
		return exitError{1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A signal (Ctrl-C, a service manager's SIGTERM, a closed terminal, a pipe into head that
	// closed) stops the check, which then removes its folders and mounts as it does at the end.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	var got atomicSignal
	var sessions atomic.Pointer[session.Manager]
	go func() {
		for sig := range sigs {
			got.store(sig.(syscall.Signal))
			cancel()
			if m := sessions.Load(); m != nil {
				m.EndAllBecause("the wall check was interrupted (" + sigName(sig.(syscall.Signal)) + ")")
			}
		}
	}()
	interrupted := func() error {
		sig := got.load()
		if sig != syscall.SIGPIPE {
			fmt.Fprintf(os.Stderr, "openworker: interrupted (%s); the check was stopped and its folders removed\n", sigName(sig))
		}
		return exitError{128 + int(sig)}
	}
	e, err := loadEnv()
	if err != nil {
		return err
	}
	// Its start sweeps what a check or a session killed earlier left behind.
	m, log, err := e.manager(p)
	if err != nil {
		return err
	}
	defer log.Close()
	defer m.EndAllBecause("the wall check finished")
	sessions.Store(m)
	if got.load() != 0 {
		return interrupted()
	}
	folder, err := m.ClaimCheck()
	if err != nil {
		return err
	}
	defer folder.Release()
	checkIn(p, folder.Dir)
	st := prove(ctx, p)
	if got.load() != 0 {
		return interrupted()
	}
	if !st.OK {
		if *report != "" {
			if err := writeReport(*report, e, p, "not available ("+string(p.Name())+"): "+st.Reason, nil); err != nil {
				return err
			}
		}
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(map[string]any{"enforcement": p.Name(), "ok": false, "reason": st.Reason})
		} else {
			fmt.Printf("Sandbox: not available (%s): %s\n", p.Name(), st.Reason)
		}
		return exitError{1}
	}
	if !*asJSON {
		fmt.Printf("Sandbox: %s\n", st.Tier)
	}
	// Programs the wall breaks are reported; only an escape, or a battery that cannot run,
	// fails the check.
	rs, err := runBattery(ctx, e, m, p, filepath.Join(folder.Dir, "work"))
	if got.load() != 0 {
		return interrupted()
	}
	if err != nil {
		return err
	}
	if *report != "" {
		if err := writeReport(*report, e, p, st.Tier, rs); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := wallcheck.PrintJSON(os.Stdout, string(p.Name()), rs); err != nil {
			return err
		}
	} else {
		printBattery(rs)
	}
	if !wallcheck.Holds(rs) {
		return exitError{1}
	}
	return nil
}

func sandboxProfile(args []string) error {
	fs := newFlags(sandboxProfileCommand)
	var rw, ro multi
	fs.Var(&rw, "rw", "a writable folder (repeatable; default: the current folder)")
	fs.Var(&ro, "ro", "a read-only folder (repeatable)")
	network := fs.String("network", "allowlist", "allowlist, open or none")
	port := fs.Int("proxy-port", 0, "the proxy's port to show in the profile, 1-65535 (default: a placeholder port, since each session picks its own)")
	var allow multi
	fs.Var(&allow, "allow", "a site allowed for the session, HOST[:PORT] (repeatable): a loopback one (127.0.0.1:5432) is reachable directly on a Mac")
	localServers := fs.Bool("local-servers", false, localServersAbout)
	freshCaches := fs.Bool("fresh-caches", false, "the profile of a session started with --fresh-caches: without the project's kept caches and your Go module downloads")
	linkChecks := fs.String("link-checks", "unknown", "what this Mac's Seatbelt is known to check of hard links and clones: unknown (every one denied) or both (both ends checked, as the link probe proves: those within the writable folders and the private tmp allowed)")
	if _, _, err := parse(fs, sandboxProfileCommand, args); err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return usagef("sandbox profile", "--proxy-port %d is not a port; give one from 1 to 65535", *port)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	if len(rw) == 0 && len(ro) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		rw = multi{wd}
	}
	n, err := policy.ParseNetwork(*network)
	if err != nil {
		return usagef("sandbox profile", "sandbox profile: --network %q is not a choice; use allowlist, open or none", *network)
	}
	if *port == 0 {
		*port = 8877
	}
	// The binary a Mac session's runner starts from: the helper beside this one, if any.
	exe, _ := runner.Binary()
	tmp := "/private/tmp/openworker-XXXXXXXX"
	rwAbs, err := absAll(rw)
	if err != nil {
		return err
	}
	roAbs, err := absAll(ro)
	if err != nil {
		return err
	}
	pol, err := policy.New(policy.Options{
		Writable: rwAbs, ReadOnly: roAbs, UserHome: home, GOOS: "darwin",
		Network: n, ProxyPort: *port, RunnerFiles: []string{exe},
	})
	if err != nil {
		return err
	}
	// The private tmp does not exist until a session starts; show where it would be.
	pol.PrivateTmp, pol.Home = tmp, tmp+"/home"
	pol.LocalServers = *localServers
	if !*freshCaches {
		// The project's kept caches and the person's module downloads, where a session of
		// these folders finds them (those that do not exist yet, as they will be).
		if state, err := config.StateDir(); err == nil && len(pol.Writable) > 0 {
			kept := filepath.Join(caches.NewStore(state).Dir(), caches.Key(pol.Writable), caches.Folder)
			pol.Caches = []policy.Placed{{Src: kept, Dst: kept}}
		}
		if dl := caches.GoDownloads(os.Environ(), home, runtime.GOOS); dl != "" {
			pol.HostCaches = []policy.Placed{{Src: dl, Dst: dl}}
		}
	}
	var entries []hosts.Entry
	for _, a := range allow {
		e, err := hosts.Parse(a)
		if err != nil {
			return usagef("sandbox profile", "sandbox profile: --allow %s: %v", a, err)
		}
		entries = append(entries, e)
	}
	pol.Forwards = session.LoopbackEntries(entries)
	lc, err := seatbelt.ParseLinkChecks(*linkChecks)
	if err != nil {
		return usagef("sandbox profile", "sandbox profile: --link-checks: %v", err)
	}
	prof, err := seatbelt.RenderWith(pol, seatbelt.Options{LinkChecks: lc})
	if err != nil {
		return err
	}
	fmt.Print(prof.String())
	return nil
}
