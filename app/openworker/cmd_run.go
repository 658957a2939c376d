package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/termtext"
)

// sessionFlags are the folder and network flags shared by run, mcp and session start.
type sessionFlags struct {
	rw, ro            multi
	allow             siteFlags
	network, provider string
	noCwd             bool
	gitMetadata       string
	localServers      bool
	publish           portFlags
	freshCaches       bool
}

// portFlags is a flag naming a port, 1 to 65535, that may be given more than once.
type portFlags []int

func (m *portFlags) String() string {
	var words []string
	for _, p := range *m {
		words = append(words, strconv.Itoa(p))
	}
	return strings.Join(words, ",")
}
func (m *portFlags) Set(s string) error {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("is not a port; give one from 1 to 65535 (got %q)", s)
	}
	*m = append(*m, p)
	return nil
}

// siteFlags is a flag naming a site, HOST[:PORT], that may be given more than once. A value
// that looks like a flag is one forgotten: "--allow -- curl …" would take "--" for the site.
type siteFlags []string

func (m *siteFlags) String() string { return strings.Join(*m, ",") }
func (m *siteFlags) Set(s string) error {
	if s == "" || strings.HasPrefix(s, "-") {
		return fmt.Errorf("needs a site after it, HOST[:PORT] (got %q)", s)
	}
	*m = append(*m, s)
	return nil
}

func (f *sessionFlags) register(fs *flag.FlagSet, defaultProvider string) {
	fs.Var(&f.rw, "rw", "a folder the command may read and write (repeatable); without any, the current folder is (add --rw . to share it too)")
	fs.Var(&f.ro, "ro", "a folder the command may only read (repeatable)")
	fs.BoolVar(&f.noCwd, "no-cwd", false, "do not share the current folder; the command starts in the first --rw folder (or the sandbox's home)")
	fs.Var(&f.allow, "allow", "a site to allow for this session only, HOST[:PORT] (repeatable; on top of the settings' list)")
	fs.StringVar(&f.network, "network", "", "allowlist (only allowed sites, through the proxy), open (any site) or none; default: the settings'")
	about := "auto (this OS's sandbox), direct (no wall), or " + nativeName()
	if defaultProvider == backend.ProviderSettings {
		about += "; default: the machine's sandbox_provider"
	}
	fs.StringVar(&f.provider, "provider", defaultProvider, about)
	fs.StringVar(&f.gitMetadata, "git-metadata", "", "protected (each repository's .git/hooks and .git/config stay read-only inside) or writable; "+
		"writable lets commands plant hooks and settings (core.fsmonitor, core.hooksPath, …) that your own git runs outside the sandbox; default: the settings' sandbox_git_metadata")
	fs.BoolVar(&f.localServers, "local-servers", false, localServersAbout)
	fs.Var(&f.publish, "publish", publishAbout)
	fs.BoolVar(&f.freshCaches, "fresh-caches", false, "start cold: the session's tool caches (Go's, npm's, pip's, cargo's, …) are its own and go with it; "+
		"the project's kept caches are neither read nor written, and your own are not read")
}

// localServersAbout is --local-servers' help, for the commands that start sessions and for
// sandbox profile. One switch, one meaning on both systems: a session's servers can be
// reached from this machine; how differs.
const localServersAbout = "let this machine reach the servers commands start (a dev server, for your browser). On Linux the sandbox has a loopback " +
	"of its own, where servers always work: with this, each port a command listens on there is published on this machine's 127.0.0.1 " +
	"(never another address) while it listens, at the same port or the next free one, which the line after the command names; " +
	"nothing inside can reach this machine through it. On a Mac the sandbox shares this Mac's loopback: this lets commands run servers " +
	"(go test with httptest, dev servers, python3 -m http.server) and connect to any loopback port. A server may bind any address " +
	"(::, 0.0.0.0, as Node's listen(port) does), but Seatbelt lets it take only connections that arrive at 127.0.0.1 or ::1: a person " +
	"on the network cannot reach the session's servers, and the session reaches nothing of theirs (outbound stays loopback and the proxy). " +
	"Whether macOS holds that for every connection a server bound to every address takes is not proved on every macOS version: where it " +
	"matters, keep the macOS firewall on, or bind 127.0.0.1. Seatbelt cannot tell the session's ports from this Mac's other programs', so " +
	"those (databases, Ollama, Jupyter, a browser's debugging port) become reachable from the session too. Off by default"

// publishAbout is --publish's help.
const publishAbout = "Linux: publish this port of the sandbox's own loopback on this machine's 127.0.0.1 while a server listens there, " +
	"as --local-servers does for every port (repeatable). On a Mac a session's servers bind this Mac's loopback itself, with --local-servers"

// folders turns the folder flags into absolute folders and the first working folder. With no
// --rw, the current folder is writable and the working folder (--ro adds read-only folders
// to it). A --rw names the writable folders: the current folder is shared only when one of
// them holds it (--rw .), and is then the working folder; otherwise the first --rw folder
// is. So a configuration started from wherever its host starts it (an agent host starts
// servers in / or the home folder) shares exactly what it names. --no-cwd shares only what
// is given. The folders keep the paths the person gave; the session resolves them once, and
// the working folder with them.
func (f *sessionFlags) folders(home string) (rw, ro []string, dir string, err error) {
	if rw, err = absAll(f.rw); err != nil {
		return nil, nil, "", err
	}
	if ro, err = absAll(f.ro); err != nil {
		return nil, nil, "", err
	}
	if f.noCwd || len(rw) > 0 {
		if len(rw) == 0 && len(ro) == 0 {
			return nil, nil, "", fmt.Errorf("--no-cwd leaves no folder to share; give one with --rw DIR or --ro DIR")
		}
		if wd, err := os.Getwd(); err == nil && !f.noCwd {
			cwd := resolved(wd)
			for _, d := range append(append([]string(nil), rw...), ro...) {
				if policy.Within(resolved(d), cwd) {
					return rw, ro, wd, nil
				}
			}
		}
		return rw, ro, "", nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil, "", fmt.Errorf("the current folder cannot be found (%v); cd to a project folder, or name one with --rw DIR", err)
	}
	cwd := resolved(wd)
	for _, d := range append(append([]string(nil), rw...), ro...) {
		if policy.Within(resolved(d), cwd) {
			return rw, ro, wd, nil
		}
	}
	if h := resolved(home); h != "" && policy.Within(cwd, h) {
		what := "your home folder"
		if cwd != h {
			what = "a folder that holds your home folder"
		}
		return nil, nil, "", fmt.Errorf("the current folder %s is %s, which a sandbox never shares (it holds your keys and logins); cd to a project folder first, or name one with --rw DIR (an absolute path where the command is started elsewhere, as an agent host does)", wd, what)
	}
	return append([]string{wd}, rw...), ro, wd, nil
}

// resolved is path with its symlinks resolved, or as it is when it cannot be.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// asUsage is err, or where a flag's value is not one of its choices, the usage error of
// command that says so (exit 2, with where the usage is).
func asUsage(command string, err error) error {
	var fe *backend.FlagError
	if errors.As(err, &fe) {
		return usagef(command, "%s: %s", command, fe.Err)
	}
	return err
}

// checkFlags says, as a usage error of command, a flag's value that is not one of its
// choices on this machine, before anything is asked of a daemon.
func (f *sessionFlags) checkFlags(command string) error {
	m := backend.Machine{GOOS: runtime.GOOS}
	if p := nativeProvider(); p != nil {
		m.Native = p.Name()
	}
	return asUsage(command, backend.CheckFlags(m, backend.Request{Provider: f.provider, Network: f.network, GitMetadata: f.gitMetadata, Allow: f.allow, Publish: f.publish}))
}

// request is the session the flags ask for.
func (f *sessionFlags) request(home string) (backend.Request, error) {
	rw, ro, dir, err := f.folders(home)
	if err != nil {
		return backend.Request{}, err
	}
	return backend.Request{Provider: f.provider, Writable: rw, ReadOnly: ro, Dir: dir, Network: f.network, Allow: f.allow, GitMetadata: f.gitMetadata, LocalServers: f.localServers, Publish: f.publish, FreshCaches: f.freshCaches}, nil
}

// prepare starts the native wall's first process as soon as the flags are known, so that it
// boots while the settings are read and the session is made; the session's Start on the same
// provider takes it. The network mode is the flag's, or the default when the settings decide;
// a wrong guess costs only that process, which Start ends and replaces.
func (f *sessionFlags) prepare(native sandbox.Provider) {
	if f.provider != backend.ProviderAuto && f.provider != nativeName() {
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

var runCommand = command{
	name:     "run",
	synopsis: "run [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider auto|seatbelt|linux|direct] [--local-servers] [--publish PORT]… [--timeout D] -- CMD [ARG…]",
	about: `Runs one command in a fresh sandbox and exits with its status. The current folder is the
working folder and writable (--no-cwd shares only the folders given); the rest of the home
folder does not exist inside. The network is the allow-list proxy: a refused site is named
after the command, with the --allow flag that opens it.

Standard input is passed to the command; there is no terminal inside (no TTY: a command
cannot push keystrokes into yours). Ctrl-C (or SIGTERM, SIGHUP) is passed to the command,
which may clean up; it is killed if it has not ended 2 s later, and openworker exits 130
(143, 129).

Flags go before the command: from the command's name on, every word is the command's (as
after --), so "openworker run ls -la" lists with -la.`,
	example: "openworker run --ro ../data --allow github.com -- git clone https://github.com/me/repo",
	minArgs: 1,
	maxArgs: -1,
	needs:   "a command after --, e.g. openworker run -- ls",
	// Everything from the command's name on is the command's: run ls -la, run echo --timeout.
	commandAfter: true,
}

func cmdRun(args []string) error {
	// A run lasts milliseconds; the runtime's monitor need not wake every 20 µs of them.
	linux.CoarsenMonitor()
	fs := newFlags(runCommand)
	var f sessionFlags
	f.register(fs, backend.ProviderAuto)
	var timeout seconds
	fs.Var(&timeout, "timeout", "end the command after this long (30s, 5m, or a number of seconds); 0 means no limit")
	argv, _, err := parse(fs, runCommand, args)
	if err != nil {
		return err
	}
	native := nativeProvider()
	f.prepare(native)
	// The signals are caught from now until the process exits, right after this returns:
	// one that comes during the teardown lets it finish. (Stopping the notification would
	// cost a round trip to the runtime's signal thread for each signal.)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	e, err := loadEnv()
	if err != nil {
		return err
	}
	e.warnSettings()
	req, err := f.request(e.home)
	if err != nil {
		return err
	}
	req.HowToAllow = func(target string) string {
		return "allow it with openworker run --allow " + target
	}
	spec, err := backend.SpecFor(e.machine(), req)
	if err != nil {
		return asUsage("run", err)
	}
	m, log, err := e.manager(native)
	if err != nil {
		return err
	}
	defer log.Close()
	// A signal before the wall is up ends the start: nothing has run. Once the command
	// runs, each signal goes to it (see Session.Signal).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomicSignal
	live := make(chan *session.Session, 1)
	go func() {
		var s *session.Session
		for sig := range sigs {
			got.store(sig.(syscall.Signal))
			select {
			case s = <-live:
			default:
			}
			if s == nil {
				cancel()
				continue
			}
			s.Signal(sig.(syscall.Signal))
		}
	}()
	out := newCommandOutput()
	// The command may be the server: a port published for it is said while it runs.
	spec.OnPublished = out.note
	s, wait, err := m.StartExec(ctx, spec, runner.ExecArgs{Argv: argv, Timeout: time.Duration(timeout), MaxOutput: 1}, os.Stdin, out.write)
	if s == nil {
		if sig := got.load(); sig != 0 {
			fmt.Fprintf(os.Stderr, "openworker: interrupted (%s) while the sandbox started; nothing was run\n", sigName(sig))
			return exitError{128 + int(sig)}
		}
		return err
	}
	live <- s
	if sig := got.load(); sig != 0 {
		s.Signal(sig) // it came while the sandbox started, after the command was sent
	}
	res, err := wait()
	// The process exits right after: the sandbox need not be waited for if nothing runs in it.
	defer func() {
		why := "its command finished (openworker run)"
		if sig := got.load(); sig != 0 {
			why = "its command was interrupted (" + sigName(sig) + ", openworker run)"
		}
		s.EndBeforeExit(why)
	}()
	rep := out.report()
	if err != nil {
		fmt.Fprintln(rep, "openworker:", termtext.Lines(err.Error()))
		return exitError{1}
	}
	reportBlocked(rep, res.Blocked, "allow with --allow HOST:PORT")
	if res.Interrupted != "" {
		sig := got.load()
		fmt.Fprintf(rep, "openworker: interrupted (%s); the command was stopped\n", termtext.Escape(res.Interrupted))
		return exitError{128 + int(sig)}
	}
	if res.Error != "" {
		fmt.Fprintln(rep, "openworker:", termtext.Lines(res.Error))
		return exitError{1}
	}
	if res.TimedOut {
		fmt.Fprintf(rep, "openworker: the command was stopped after %s (--timeout)\n", time.Duration(timeout).Round(time.Millisecond))
	}
	return exitError{res.ExitCode}
}

// reportBlocked lists the sites the proxy refused during a command, each with how to allow
// it where the command ran: how, with HOST:PORT standing for what an entry must name (the
// site, or the address an allowed name led to), or where how is "", what the session said for
// the site in its state (Blocked.HowTo, the proxy's words).
func reportBlocked(w io.Writer, bs []session.Blocked, how string) {
	for _, b := range bs {
		hint := b.HowTo
		if how != "" {
			hint = strings.ReplaceAll(how, "HOST:PORT", b.ToAllow())
		}
		if hint != "" {
			hint = " (" + hint + ")"
		}
		fmt.Fprintf(w, "openworker: blocked %s — %s%s\n", termtext.Escape(b.String()), termtext.Escape(b.Reason), termtext.Escape(hint))
	}
}

func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return strings.ToUpper(sig.String())
}

func absPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", p, err)
	}
	return a, nil
}
