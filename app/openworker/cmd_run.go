package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

// sessionFlags are the folder and network flags shared by run, sandbox profile and session start.
type sessionFlags struct {
	rw, ro, allow     multi
	network, provider string
}

func (f *sessionFlags) register(fs *flag.FlagSet, withProvider bool) {
	fs.Var(&f.rw, "rw", "a folder the command may read and write (repeatable; default: the current folder)")
	fs.Var(&f.ro, "ro", "a folder the command may only read (repeatable)")
	fs.Var(&f.allow, "allow", "a site to allow for this run, HOST[:PORT] (repeatable; added to the settings' list)")
	fs.StringVar(&f.network, "network", "", "allowlist (only allowed sites, through the proxy), open (any site) or none; default: the settings'")
	if withProvider {
		fs.StringVar(&f.provider, "provider", "auto", "auto (this OS's sandbox), seatbelt, linux or direct (no wall)")
	}
}

// spec turns the flags and settings into a session spec.
func (f *sessionFlags) spec(e *env) (session.Spec, error) {
	var spec session.Spec
	prov, err := pickProvider(f.provider)
	if err != nil {
		return spec, err
	}
	netName := f.network
	if netName == "" {
		netName = e.settings.NetworkProfile
	}
	network, err := policy.ParseNetwork(netName)
	if err != nil {
		return spec, err
	}
	var own []hosts.Entry
	for _, a := range f.allow {
		h, err := hosts.Parse(a)
		if err != nil {
			return spec, fmt.Errorf("--allow: %w", err)
		}
		own = append(own, h)
	}
	rw := []string(f.rw)
	if len(rw) == 0 && len(f.ro) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return spec, err
		}
		rw = []string{wd}
	}
	rw, err = absAll(rw)
	if err != nil {
		return spec, err
	}
	ro, err := absAll(f.ro)
	if err != nil {
		return spec, err
	}
	return session.Spec{Provider: prov, Writable: rw, ReadOnly: ro, Network: network, Hosts: e.settings.NetworkHosts, SessionHosts: own, Toolchains: e.settings.Toolchains}, nil
}

// prepare starts the native wall's first process as soon as the flags are known, so that it
// boots while the settings are read and the session is made; the session's Start on the same
// provider takes it. The network mode is the flag's, or the default when the settings decide;
// a wrong guess costs only that process, which Start ends and replaces.
func (f *sessionFlags) prepare(native sandbox.Provider) {
	if f.provider != "auto" && f.provider != nativeName() {
		return
	}
	pp, ok := native.(sandbox.Preparer)
	if !ok {
		return
	}
	network, err := policy.ParseNetwork(f.network)
	if f.network == "" || err != nil {
		network = policy.Allowlist
	}
	pp.Prepare(network)
}

func absAll(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		a, err := absPath(d)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func cmdRun(args []string) error {
	// A run lasts milliseconds; the runtime's monitor need not wake every 20 µs of them.
	linux.CoarsenMonitor()
	fs := newFlags("run", "openworker run [--rw DIR]… [--ro DIR]… [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider auto|seatbelt|linux|direct] [--timeout D] -- CMD [ARG…]")
	var f sessionFlags
	f.register(fs, true)
	timeout := fs.Duration("timeout", 0, "end the command after this long (e.g. 30s, 5m); 0 means no limit")
	if err := parse(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		return fmt.Errorf("no command given; put it after --, e.g. openworker run -- ls")
	}
	native := nativeProvider()
	f.prepare(native)
	e, err := loadEnv()
	if err != nil {
		return err
	}
	spec, err := f.spec(e)
	if err != nil {
		return err
	}
	m, log, err := e.manager(native)
	if err != nil {
		return err
	}
	defer log.Close()
	// The signals stay caught until the process exits, right after this returns: one that
	// comes during the teardown lets it finish. (Stopping the notification would cost a
	// round trip to the runtime's signal thread for each signal.)
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// The command goes with the wall check: it runs as soon as the wall is proved. An
	// interrupt (ctx) ends everything behind the wall.
	s, res, err := m.StartExec(ctx, spec, runner.ExecArgs{Argv: argv, Timeout: *timeout, MaxOutput: 1}, func(stream string, data []byte) {
		if stream == "stderr" {
			os.Stderr.Write(data)
		} else {
			os.Stdout.Write(data)
		}
	})
	if s == nil {
		return err
	}
	// The process exits right after: the sandbox need not be waited for if nothing runs in it.
	defer s.EndBeforeExit()
	if ctx.Err() != nil {
		return exitError{130}
	}
	if err != nil {
		return err
	}
	reportBlocked(res.Blocked)
	if res.Error != "" {
		return fmt.Errorf("%s", res.Error)
	}
	if res.TimedOut {
		fmt.Fprintf(os.Stderr, "openworker: the command was stopped after %s (--timeout)\n", timeout.Round(time.Millisecond))
	}
	return exitError{res.ExitCode}
}

func reportBlocked(bs []session.Blocked) {
	for _, b := range bs {
		fmt.Fprintf(os.Stderr, "openworker: blocked %s — %s (allow with --allow %s)\n", b, b.Reason, b)
	}
}

func absPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", p, err)
	}
	return a, nil
}
