// Package wallcheck is the battery of real programs `openworker sandbox check` runs behind the
// very wall a session gets: a shell with a here-document and a command substitution, ls of the
// root, env, git, Python's multiprocessing and Node's os.cpus() where they are installed, a
// write and a read in the session folder, a zsh here-document, a Unix socket in TMPDIR and a
// server on loopback (on a Mac: cc through the developer shims, git and cc with nothing on
// their error output, ls -l and date with no report of denials, and a loopback server refused
// without --local-servers), and what must be refused: a read of a login file, a
// direct connection, the command line of a process outside the wall, and on Linux a host
// kernel setting opened for writing, a set-user-ID file and an AF_VSOCK socket. Each program
// gets one line: it works (or is refused, as it must be), or what went wrong and the denials
// the wall reported for it.
//
// The package is OS-neutral: it decides what to run and judges the outcomes; starting the
// session and running the commands is the caller's (a session's Exec). It does not start a
// wall itself and does not decide what a wall allows.
package wallcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Outcome is what running one command behind the wall gave.
type Outcome struct {
	ExitCode int
	Stdout   string
	Stderr   string
	// Denials are what the wall reported refusing while the command ran ("OP TARGET
	// (PROCESS)"); empty where the wall does not report them.
	Denials []string
}

// Exec runs one shell command behind the wall, in the session's writable working folder.
type Exec func(ctx context.Context, command string) (Outcome, error)

// Probe is one program of the battery.
type Probe struct {
	Name    string // what the line starts with: "sh here-document and $(...)"
	Command string // the shell command run behind the wall
	// Needs is a program that must be installed on this machine, or the probe is skipped.
	Needs string
	// Refused says the wall must refuse it: it works when the command fails.
	Refused bool
	// Judge says what is wrong with an outcome; "" when it is as it must be.
	Judge func(Outcome) string
	// Reported is what a refusal's denial must name, where the wall reports denials: a
	// refusal whose denial the report lacks says the report (not the wall) is broken.
	Reported string
	// ByOutput says a refusal is judged by Judge alone: the program may exit 0 and still
	// have shown nothing it must not.
	ByOutput bool
	// Private: see Result.Private.
	Private bool
	// Info says its output is what its line says (what it found), not a judgement: it works
	// when it ran, and its detail is its output.
	Info bool
	// Skip, when set, says why the probe cannot run here although Needs is found (a Mac's
	// java that only offers to install Java); "" runs it.
	Skip func() string
	// Ran, when set, says why a refusal's outcome proves nothing because the probe never
	// got to try (its interpreter did not run): the line is then Failed, not Refused.
	Ran func(Outcome) string
}

// Status words of a result.
const (
	Works      = "works"       // a program that must run, ran
	Refused    = "refused"     // an escape that must be refused, was
	Broken     = "broken"      // a program that must run did not
	NotRefused = "not refused" // an escape got through the wall
	Skipped    = "skipped"     // the program is not installed here
	Failed     = "failed"      // the command could not be run at all
)

// Result is one line of the report.
type Result struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Status  string   `json:"status"`
	OK      bool     `json:"ok"`
	Detail  string   `json:"detail,omitempty"`
	Denials []string `json:"denials,omitempty"`
	// Unreported says the wall refused, but its denial was not in the command's report.
	Unreported bool `json:"unreported,omitempty"`
	// Private says its output may hold what a report must not (the environment's values):
	// a report leaves its detail out.
	Private bool `json:"-"`
	// Info says Detail is what the program found, shown however it went.
	Info bool `json:"info,omitempty"`
	// Raw are what the line rests on, one attempt each, for the report (the link probe's
	// six attempts and how each went).
	Raw []string `json:"raw,omitempty"`
}

// Options describe the machine the battery runs on.
type Options struct {
	GOOS string
	// UserHome is the person's real home folder (the sandbox has a home of its own): the
	// login-file probe reads in it.
	UserHome string
	// DirectPort is a port on 127.0.0.1 that something outside the wall listens on and that
	// the session's allow list does not name: the direct-connection probe must not reach it.
	// 0 leaves the probe out.
	DirectPort int
	// Reached, when set, says whether anything connected to DirectPort since the probe ran;
	// a connection that got there is an escape, whatever the command's exit status says.
	Reached func() bool
	// ReportsDenials says the wall reports each command's denials (Seatbelt, when the log
	// can be read), so that a refusal must come with its denial.
	ReportsDenials bool
	// OutsidePID is a process outside the wall, of the same user, whose command line holds
	// OutsideArg: the probe of other processes' command lines (kern.procargs2 on macOS) must
	// not show it. 0 leaves the probe out.
	OutsidePID int
	OutsideArg string
	// GitMetadataProtected says repository metadata is read-only in the session's folders
	// (sandbox_git_metadata is not "writable"). On a Mac the profile then refuses a .git made
	// anywhere in them, so the person's own git never obeys settings a command wrote: the
	// probe makes one in the session folder, which must be refused.
	GitMetadataProtected bool
	// RegistryPort is a port on 127.0.0.1 where an npm registry stand-in serves outside the
	// wall (ServeRegistry), which the session's allow list names: npm install must fetch
	// and install its package. 0 leaves the probe out.
	RegistryPort int
	// JavaMissing, when set, says why the java found on PATH is no Java (on a Mac,
	// /usr/bin/java is there whether or not a runtime is installed); "" when it is one.
	JavaMissing func() string
	// RosettaMissing, on a Mac, says why x86_64 programs cannot run on this Mac at all (an
	// Intel Mac, or Rosetta not installed), as found outside the wall; "" when they can. Nil
	// leaves the Rosetta line out.
	RosettaMissing func() string
}

// Battery returns the probes for a machine.
func Battery(o Options) []Probe {
	git := "git"
	gitJudge := wantOutput("git version")
	if o.GOOS == "darwin" {
		git = "/usr/bin/git" // the xcode-select shim, which is what breaks first on a Mac
		// xcrun's cache errors go to the error output and the command still works: it
		// must stay empty.
		gitJudge = quietly(gitJudge)
	}
	ps := []Probe{
		{
			Name:    "sh here-document and $(...)",
			Command: "/bin/sh -c 'x=$(echo substituted); cat <<EOF\nhere $x\nEOF'",
			Judge:   wantOutput("here substituted"),
		},
		{Name: "ls /", Command: "ls /", Judge: wantSomeOutput},
		{Name: "env", Command: "env", Judge: wantOutput("HOME="), Private: true},
		{
			// Which everyday tools the session finds, and whether its language is UTF-8: an
			// app started by launchd has a minimal PATH and no LANG to give. No value of the
			// environment is printed.
			Name: "tools on the session's PATH",
			Command: `f=; n=; for p in git node npm python3 go cargo java make cc; do if command -v $p >/dev/null 2>&1; then f="$f $p"; else n="$n $p"; fi; done; ` +
				`echo "found:${f:- none}; not found:${n:- none}"; case "${LC_ALL:-${LC_CTYPE:-$LANG}}" in *UTF-8*|*utf8*|*UTF8*|*utf-8*) echo "UTF-8 locale";; *) echo "no UTF-8 locale";; esac`,
			Info: true,
		},
		{Name: "git --version", Command: git + " --version", Needs: git, Judge: gitJudge},
		{
			Name:    "python3 multiprocessing",
			Command: `python3 -c 'import multiprocessing,os; multiprocessing.Lock(); print(os.cpu_count())'`,
			Needs:   "python3",
			Judge:   wantNumber,
		},
		{
			Name:    "node os.cpus()",
			Command: `node -e 'console.log(require("os").cpus().length)'`,
			Needs:   "node",
			Judge:   wantNumber,
		},
		{
			Name:    "write and read in the session folder",
			Command: "printf written > .openworker-check && cat .openworker-check && rm .openworker-check",
			Judge:   wantOutput("written"),
		},
	}
	ps = append(ps, everydayProbes(o.GOOS)...)
	ps = append(ps, buildProbes(o)...)
	if o.GOOS == "linux" {
		ps = append(ps, linuxKernelProbes()...)
	}
	if o.GOOS == "darwin" {
		ps = append(ps, macQuestions(o)...)
	}
	if o.GOOS == "darwin" && o.GitMetadataProtected {
		p := Probe{
			Name: "a repository's .git made in the session folder",
			// The folder around it is removed whatever happened, so a broken wall leaves
			// nothing behind either.
			Command: "mkdir .openworker-check-repo && { mkdir .openworker-check-repo/.git; rc=$?; rm -rf .openworker-check-repo; exit $rc; }",
			Refused: true,
		}
		if o.ReportsDenials {
			p.Reported = ".openworker-check-repo/.git"
		}
		ps = append(ps, p)
	}
	if secret := loginFile(o.UserHome); secret != "" {
		// head -c 0 opens the file and reads nothing: a broken wall shows no secret here.
		p := Probe{
			Name:    "read of " + secret,
			Command: "head -c 0 -- " + shellQuote(secret),
			Refused: true,
		}
		if o.ReportsDenials {
			p.Reported = secret
		}
		ps = append(ps, p)
	}
	if o.DirectPort > 0 {
		addr := "127.0.0.1/" + strconv.Itoa(o.DirectPort)
		reached := o.Reached
		reported := ""
		if o.ReportsDenials {
			reported = "127.0.0.1:" + strconv.Itoa(o.DirectPort)
		}
		ps = append(ps, Probe{
			Reported: reported,
			Name:     "direct connection to 127.0.0.1:" + strconv.Itoa(o.DirectPort),
			// bash's /dev/tcp connects with no program of its own; only loopback is tried.
			Command: "bash -c 'exec 3<>/dev/tcp/" + addr + "'",
			Needs:   "bash",
			Refused: true,
			Judge: func(Outcome) string {
				if reached != nil && reached() {
					return "a connection reached the listener outside the wall"
				}
				return ""
			},
		})
	}
	if o.OutsidePID > 0 && o.OutsideArg != "" {
		arg := o.OutsideArg
		var ran func(Outcome) string
		name, command, needs := "command line of a process outside", "ps -ww -o args= -p "+strconv.Itoa(o.OutsidePID), "ps"
		if o.GOOS == "darwin" {
			// ps is set-user-ID, which the kernel refuses to run in any sandbox: its refusal
			// proves nothing about the wall. The probe asks the kernel itself, as ps would.
			name = "command line of a process outside (kern.procargs2, read through python3's ctypes)"
			command, needs = "python3 -c '"+procargsScript+"' "+strconv.Itoa(o.OutsidePID), "python3"
			ran = func(out Outcome) string {
				if out.ExitCode != 0 && !strings.Contains(out.Stderr, "sysctl kern.procargs2") {
					return "python3 did not get to ask: " + lastLine(out.Stderr)
				}
				return ""
			}
		}
		ps = append(ps, Probe{
			Name:     name,
			Command:  command,
			Needs:    needs,
			Refused:  true,
			ByOutput: true,
			Ran:      ran,
			Judge: func(out Outcome) string {
				if strings.Contains(out.Stdout, arg) {
					return "it showed " + clip(out.Stdout)
				}
				return ""
			},
		})
	}
	return ps
}

// procargsScript reads another process's command line from the kernel on a Mac: sysctl
// {CTL_KERN, KERN_PROCARGS2, pid} (1, 49), its size first. It prints what it read; a refusal
// ends it with the error. (No single quote in it: the battery quotes it for the shell.)
const procargsScript = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mib = (ctypes.c_int * 3)(1, 49, int(sys.argv[1]))
size = ctypes.c_size_t(0)
def check(rc):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "sysctl kern.procargs2: " + os.strerror(e))
check(libc.sysctl(mib, 3, None, ctypes.byref(size), None, 0))
buf = ctypes.create_string_buffer(size.value)
check(libc.sysctl(mib, 3, buf, ctypes.byref(size), None, 0))
sys.stdout.write(buf.raw[4:size.value].replace(b"\0", b" ").decode("utf-8", "replace"))`

// everydayProbes are what an agent runs all day: a compiler through the developer shims, zsh's
// here-documents, a listing and the date with no report of denials after them, a Unix socket
// in TMPDIR, and a server on loopback, which on a Mac needs the session's --local-servers.
func everydayProbes(goos string) []Probe {
	ps := []Probe{
		{
			Name:    "zsh here-document",
			Command: "zsh -c 'cat <<EOF\nzsh here\nEOF'",
			Needs:   "zsh",
			Judge:   wantOutput("zsh here"),
		},
		{
			Name: "Unix socket in $TMPDIR",
			Command: `python3 -c 'import os,socket; p=os.path.join(os.environ["TMPDIR"], "openworker-check.sock")
s=socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
c=socket.socket(socket.AF_UNIX); c.connect(p); print("connected"); os.unlink(p)'`,
			Needs: "python3",
			Judge: wantOutput("connected"),
		},
	}
	server := `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1); print("listening")'`
	if goos == "darwin" {
		ps = append(ps,
			Probe{Name: "cc --version", Command: "cc --version", Needs: "cc", Judge: quietly(wantOutput("version"))},
			// What every program does as it starts (the boot arguments, the time zone's
			// shared segment, the automounter's device) ends no command with a report.
			Probe{Name: "ls -l /; date, with no report of denials", Command: "ls -l / && date", Judge: quietly(wantSomeOutput)},
			// The check's session has no --local-servers: Seatbelt cannot tell a port the
			// session opened from this Mac's other programs', so binding is the person's call.
			Probe{Name: "server on loopback without --local-servers", Command: server, Needs: "python3", Refused: true},
		)
	} else {
		ps = append(ps, Probe{Name: "server on loopback", Command: server, Needs: "python3", Judge: wantOutput("listening")})
	}
	return ps
}

// macQuestions are lines whose outcome no public source settles: whether an x86_64 program
// (Intel Homebrew on Apple silicon) starts under Rosetta behind the wall, who logs a refused
// service lookup (the kernel, or sandboxd, whose reports the follower reads too), which the
// report's denial line names, and which spelling of a path through the data volume Seatbelt
// matches.
func macQuestions(o Options) []Probe {
	var ps []Probe
	if o.RosettaMissing != nil {
		ps = append(ps, Probe{Name: "an x86_64 program under Rosetta", Command: "arch -x86_64 /usr/bin/true", Needs: "arch", Skip: o.RosettaMissing})
	}
	p := Probe{Name: "open -g . (a service lookup the wall refuses)", Command: "/usr/bin/open -g .", Needs: "/usr/bin/open", Refused: true}
	if o.ReportsDenials {
		p.Reported = "mach-lookup"
	}
	// The data volume's own path to every file, the home folders included: the profile
	// denies it whole; the denial says which spelling Seatbelt matched (the path as given,
	// or /Users through the firmlink).
	data := Probe{Name: "ls /System/Volumes/Data/Users (the data volume's path to the home folders)", Command: "ls /System/Volumes/Data/Users", Refused: true}
	if o.ReportsDenials {
		data.Reported = "/Users"
	}
	return append(ps, p, data)
}

// buildProbes are the toolchains' everyday work: the JVM starting, npm installing a package
// from a registry (a stand-in on loopback, reached as a session reaches an allowed loopback
// entry) and cargo building a crate. On a Mac npm and cargo need hard links and clones, which
// only a proved Mac allows. Each works in a folder of its own in the session folder, removed
// whatever happened.
func buildProbes(o Options) []Probe {
	ps := []Probe{
		{
			Name:    "java -version",
			Command: "java -version",
			Needs:   "java",
			Skip:    o.JavaMissing,
			// The JVM writes its version to the error output.
			Judge: func(out Outcome) string {
				if !strings.Contains(out.Stderr+out.Stdout, "version") {
					return fmt.Sprintf("its output %q lacks a version", clip(out.Stderr+out.Stdout))
				}
				return ""
			},
		},
		{
			Name: "cargo build of a one-file crate",
			Command: `d=.openworker-check-crate; rm -rf $d; mkdir -p $d/src && ` +
				`printf '[package]\nname = "owcheck"\nversion = "0.1.0"\nedition = "2021"\n' > $d/Cargo.toml && ` +
				`printf 'fn main() { println!("built by cargo"); }\n' > $d/src/main.rs && ` +
				`(cd $d && cargo build --offline --quiet 1>&2 && ./target/debug/owcheck); rc=$?; rm -rf $d; exit $rc`,
			Needs: "cargo",
			Judge: wantOutput("built by cargo"),
		},
	}
	if o.RegistryPort > 0 {
		registry := "http://127.0.0.1:" + strconv.Itoa(o.RegistryPort) + "/"
		ps = append(ps, Probe{
			Name: "npm install from a registry on loopback",
			Command: `d=.openworker-check-npm; rm -rf $d; mkdir $d && cd $d && ` +
				`printf '{"name":"openworker-check","version":"1.0.0","private":true}' > package.json && ` +
				`npm install --registry=` + registry + ` --no-audit --no-fund --no-update-notifier --fetch-retries=0 ` + RegistryPackage + ` 1>&2 && ` +
				`node -e 'console.log(require("` + RegistryPackage + `"))'; rc=$?; cd ..; rm -rf $d; exit $rc`,
			Needs: "npm",
			Judge: wantOutput(registryPackageSays),
		})
	}
	return ps
}

// LocalServerProbes are run in a second session, with the local-servers switch on: a server
// on loopback must then bind and take a connection (on Linux, as without the switch: there
// it publishes the port on this machine's loopback besides), and so must one bound to every
// address, ::, as Node's listen(port), Express, supertest and python3 -m http.server bind,
// taking a connection made to ::1.
func LocalServerProbes() []Probe {
	return []Probe{{
		Name: "server on loopback with --local-servers",
		Command: `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c=socket.create_connection(s.getsockname()); a,_=s.accept(); print("served")'`,
		Needs: "python3",
		Judge: wantOutput("served"),
	}, {
		Name: "server on :: (every address) with --local-servers",
		Command: `python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::", 0)); s.listen(1)
c=socket.create_connection(("::1", s.getsockname()[1])); a,_=s.accept(); print("served")'`,
		Needs: "python3",
		Judge: wantOutput("served"),
	}}
}

// quietly is judge, and also that the command printed nothing to its error output: no
// tool's complaint, no report of denials.
func quietly(judge func(Outcome) string) func(Outcome) string {
	return func(o Outcome) string {
		if why := judge(o); why != "" {
			return why
		}
		if s := strings.TrimSpace(o.Stderr); s != "" {
			return "its error output is not empty: " + clip(s)
		}
		return ""
	}
}

// linuxKernelProbes are what the Linux wall must refuse past files and network: a host-wide
// kernel setting opened for writing (with nothing written, so that a broken wall changes
// nothing), a set-user-ID file made in the session folder (removed at once), and a socket of
// a family no network namespace separates.
func linuxKernelProbes() []Probe {
	return []Probe{
		{
			Name:    "open a host kernel setting for writing",
			Command: "exec 3>>/proc/sys/kernel/core_pattern",
			Refused: true,
		},
		{
			Name: "make a set-user-ID file",
			Command: "f=.openworker-check-setuid; : > $f && chmod u+s $f; s=$?; " +
				"test -u $f && s=0; rm -f $f; exit $s",
			Refused: true,
		},
		{
			Name:    "open an AF_VSOCK socket",
			Command: `python3 -c 'import socket; socket.socket(40, socket.SOCK_STREAM)'`,
			Needs:   "python3",
			Refused: true,
		},
	}
}

// loginFile picks a file in the person's ~/.ssh to try to read (never one it creates), or the
// home folder itself when there is no ~/.ssh.
func loginFile(home string) string {
	if home == "" {
		return ""
	}
	dir := filepath.Join(home, ".ssh")
	for _, name := range []string{"known_hosts", "config", "id_ed25519", "id_rsa", "authorized_keys"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(dir, name)
		}
	}
	if des, err := os.ReadDir(dir); err == nil {
		for _, de := range des {
			if de.Type().IsRegular() {
				return filepath.Join(dir, de.Name())
			}
		}
	}
	return home
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func wantOutput(sub string) func(Outcome) string {
	return func(o Outcome) string {
		if !strings.Contains(o.Stdout, sub) {
			return fmt.Sprintf("its output %q lacks %q", clip(o.Stdout), sub)
		}
		return ""
	}
}

func wantSomeOutput(o Outcome) string {
	if strings.TrimSpace(o.Stdout) == "" {
		return "it printed nothing"
	}
	return ""
}

func wantNumber(o Outcome) string {
	if n, err := strconv.Atoi(strings.TrimSpace(o.Stdout)); err != nil || n < 1 {
		return fmt.Sprintf("it printed %q, not a CPU count", clip(o.Stdout))
	}
	return ""
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// Outside is the machine outside the wall: where the battery finds each probe's program, and
// tries one that failed inside.
type Outside struct {
	// LookPath finds a probe's program on this machine; one not found skips the probe.
	LookPath func(string) (string, error)
	// Exec, when set, runs a command outside the wall (ExecOutside). A program that must
	// run and failed inside is tried there: one that fails outside too is not the wall's
	// doing, and is skipped with what it said. Nil tries nothing outside.
	Exec Exec
	// Advice says how a person makes dir, the folder a program was found in outside,
	// readable inside (a toolchain to switch on), for one the session does not see; nil
	// says only that it does not.
	Advice func(dir string) string
}

// Run runs each probe with exec behind the wall, skipping those whose program outside does
// not find, and judges the outcomes. Only a program that works outside and fails inside is
// broken.
func Run(ctx context.Context, exec Exec, probes []Probe, outside Outside) []Result {
	var out []Result
	for _, p := range probes {
		r := Result{Name: p.Name, Command: p.Command, Private: p.Private, Info: p.Info}
		found := ""
		if p.Needs != "" {
			var err error
			if found, err = outside.LookPath(p.Needs); err != nil {
				r.Status, r.OK, r.Detail = Skipped, true, p.Needs+" is not installed here"
				out = append(out, r)
				continue
			}
		}
		if p.Skip != nil {
			if why := p.Skip(); why != "" {
				r.Status, r.OK, r.Detail = Skipped, true, why
				out = append(out, r)
				continue
			}
		}
		o, err := exec(ctx, p.Command)
		r.Denials = o.Denials
		switch {
		case err != nil:
			r.Status, r.Detail = Failed, err.Error()
		case p.Refused && p.Ran != nil && p.Ran(o) != "":
			r.Status, r.Detail = Failed, p.Ran(o)
		case p.Refused:
			why := ""
			if p.Judge != nil {
				why = p.Judge(o)
			}
			if o.ExitCode == 0 && why == "" && !p.ByOutput {
				why = "it succeeded"
			}
			if why == "" {
				r.Status, r.OK, r.Detail = Refused, true, lastLine(o.Stderr)
				r.Unreported = p.Reported != "" && !slices.ContainsFunc(o.Denials, func(d string) bool { return strings.Contains(d, p.Reported) })
			} else {
				r.Status, r.Detail = NotRefused, why
			}
		default:
			why := p.failed(o)
			if why == "" {
				r.Status, r.OK = Works, true
				if p.Info {
					r.Detail = clip(strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(o.Stdout), "\n", "; ")), " "))
				}
				break
			}
			r.Status, r.Detail = Broken, why
			notSeen := ""
			if o.ExitCode == 127 && found != "" {
				// The shell did not find it inside, although it is installed.
				notSeen = p.Needs + " is " + found + " outside the sandbox, in " + filepath.Dir(found) + ", which sessions do not see"
				if outside.Advice != nil {
					notSeen += ": " + outside.Advice(filepath.Dir(found))
				}
				r.Detail += "; outside the sandbox it is " + found + ", which the session does not see"
			}
			if outside.Exec == nil || p.Needs == "" {
				break
			}
			// The wall is blamed only for a program that works outside it.
			there, err := outside.Exec(ctx, p.Command)
			switch {
			case err != nil:
				r.Detail += "; it could not be tried outside the sandbox: " + err.Error()
			case p.failed(there) != "":
				r.Status, r.OK, r.Detail = Skipped, true, "fails outside the sandbox too ("+p.failed(there)+")"
			case notSeen != "":
				r.Status, r.OK, r.Detail = Skipped, true, notSeen
			}
		}
		out = append(out, r)
	}
	return out
}

// failed says what is wrong with the outcome of a program that must run: its exit status
// and the line it said, or its judge's word; "" when it worked.
func (p Probe) failed(o Outcome) string {
	if o.ExitCode != 0 {
		return fmt.Sprintf("exit status %d: %s", o.ExitCode, errorLine(o.Stderr))
	}
	if p.Judge != nil {
		return p.Judge(o)
	}
	return ""
}

// errorLine is the line of an error output that says what went wrong: the first that starts
// with "error" (cargo's and rustup's, which a backtrace may follow), or else the last.
func errorLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(strings.ToLower(l), "error") {
			return clip(l)
		}
	}
	return lastLine(s)
}

// lastLine is the line of an error output that says what went wrong: the last one (a Python
// traceback ends with it; a shell's message is its only line).
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return clip(s)
}

// Holds reports whether the wall held: every escape was refused and every command could be
// run. A program the wall breaks is reported, but does not make the wall unsafe.
func Holds(rs []Result) bool {
	return !slices.ContainsFunc(rs, func(r Result) bool { return r.Status == NotRefused || r.Status == Failed })
}

// OK reports whether every program worked and every escape was refused.
func OK(rs []Result) bool {
	return !slices.ContainsFunc(rs, func(r Result) bool { return !r.OK })
}

// Print writes one line per program, and under a program that did not do as it must, the
// denials the wall reported for it.
func Print(w io.Writer, rs []Result) {
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Name))
	}
	for _, r := range rs {
		line := fmt.Sprintf("  %-*s  %s", width, r.Name, r.Status)
		if r.Detail != "" && (!r.OK || r.Status == Skipped || r.Info) {
			line += ": " + r.Detail
		}
		if r.Unreported {
			line += ", but its denial was missing from the command's report"
		}
		fmt.Fprintln(w, line)
		if !r.OK {
			for _, d := range r.Denials {
				fmt.Fprintf(w, "  %-*s    denied: %s\n", width, "", d)
			}
		}
	}
}

// PrintJSON writes the results as one JSON document, for scripts.
func PrintJSON(w io.Writer, enforcement string, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Enforcement string   `json:"enforcement"`
		OK          bool     `json:"ok"`
		WallHolds   bool     `json:"wall_holds"`
		Programs    []Result `json:"programs"`
	}{enforcement, OK(rs), Holds(rs), rs})
}
