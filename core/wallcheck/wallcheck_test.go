package wallcheck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeExec answers each command with a canned outcome, as a wall would.
type fakeExec map[string]Outcome

func (f fakeExec) exec(_ context.Context, cmd string) (Outcome, error) {
	for sub, o := range f {
		if strings.Contains(cmd, sub) {
			return o, nil
		}
	}
	return Outcome{}, errors.New("no outcome for " + cmd)
}

func found(string) (string, error) { return "/usr/bin/x", nil }

func TestJudging(t *testing.T) {
	home := t.TempDir()
	os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte("k"), 0o600)
	reached := false
	probes := Battery(Options{GOOS: "darwin", UserHome: home, DirectPort: 4242, Reached: func() bool { return reached }})
	tests := []struct {
		name    string
		probe   string // a word of the probe's name
		out     Outcome
		reached bool
		want    string
	}{
		{"shell_works", "$(...)", Outcome{Stdout: "here substituted\n"}, false, Works},
		{"shell_broken", "$(...)", Outcome{ExitCode: 1, Stderr: "sh: cannot create temp file for here-document: Operation not permitted",
			Denials: []string{"file-write-create /private/var/tmp/sh-thd.1 (sh)"}}, false, Broken},
		{"shell_wrong_output", "$(...)", Outcome{Stdout: "here \n"}, false, Broken},
		{"python_count", "python3", Outcome{Stdout: "8\n"}, false, Works},
		{"python_no_count", "python3", Outcome{Stdout: "None\n"}, false, Broken},
		{"secret_refused", "known_hosts", Outcome{ExitCode: 1, Stderr: "head: Operation not permitted"}, false, Refused},
		{"secret_read", "known_hosts", Outcome{}, false, NotRefused},
		{"direct_refused", "direct", Outcome{ExitCode: 1, Stderr: "connect: Operation not permitted"}, false, Refused},
		{"direct_reached", "direct", Outcome{ExitCode: 1}, true, NotRefused},
		{"direct_connected", "direct", Outcome{}, false, NotRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p []Probe
			for _, pr := range probes {
				if strings.Contains(pr.Name, tt.probe) {
					p = append(p, pr)
				}
			}
			if len(p) != 1 {
				t.Fatalf("%d probes named like %q", len(p), tt.probe)
			}
			reached = tt.reached
			rs := Run(context.Background(), func(context.Context, string) (Outcome, error) { return tt.out, nil }, p, Outside{LookPath: found})
			if rs[0].Status != tt.want || rs[0].OK != (tt.want == Works || tt.want == Refused) {
				t.Errorf("status %q ok %v (%s), want %q", rs[0].Status, rs[0].OK, rs[0].Detail, tt.want)
			}
			if Holds(rs) != (tt.want != NotRefused) {
				t.Errorf("Holds = %v for %s", Holds(rs), tt.want)
			}
		})
	}
}

func TestGitMetadataProbe(t *testing.T) {
	home := t.TempDir()
	find := func(o Options) []Probe {
		var p []Probe
		for _, pr := range Battery(o) {
			if strings.Contains(pr.Name, ".git") {
				p = append(p, pr)
			}
		}
		return p
	}
	if p := find(Options{GOOS: "darwin", UserHome: home}); len(p) != 0 {
		t.Errorf("with repository metadata writable, the battery still makes a .git: %+v", p)
	}
	if p := find(Options{GOOS: "linux", UserHome: home, GitMetadataProtected: true}); len(p) != 0 {
		t.Errorf("on Linux, where a repository made inside is found after the command, the battery makes a .git: %+v", p)
	}
	p := find(Options{GOOS: "darwin", UserHome: home, GitMetadataProtected: true, ReportsDenials: true})
	if len(p) != 1 || !p[0].Refused {
		t.Fatalf("want one refusal probe, got %+v", p)
	}
	for _, tt := range []struct {
		name string
		out  Outcome
		want string
	}{
		{"refused", Outcome{ExitCode: 1, Stderr: "mkdir: .openworker-check-repo/.git: Operation not permitted",
			Denials: []string{"file-write-create /private/var/folders/x/T/work/.openworker-check-repo/.git (mkdir)"}}, Refused},
		{"made", Outcome{}, NotRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := Run(context.Background(), func(context.Context, string) (Outcome, error) { return tt.out, nil }, p, Outside{LookPath: found})
			if rs[0].Status != tt.want || rs[0].Unreported {
				t.Errorf("%+v, want %s", rs[0], tt.want)
			}
		})
	}
}

func TestSkipsMissingPrograms(t *testing.T) {
	probes := Battery(Options{GOOS: "linux"})
	rs := Run(context.Background(), fakeExec{}.exec, probes, Outside{LookPath: func(name string) (string, error) { return "", errors.New("missing") }})
	for _, r := range rs {
		if r.Name == "node os.cpus()" && (r.Status != Skipped || !r.OK) {
			t.Errorf("node: %+v", r)
		}
		if r.Name == "ls /" && r.Status != Failed {
			t.Errorf("ls: %+v", r) // fakeExec has no outcome: the command could not run
		}
	}
	if OK(rs) || Holds(rs) {
		t.Error("a battery whose commands could not run is OK")
	}
}

func TestPrintOneLinePerProgram(t *testing.T) {
	rs := []Result{
		{Name: "ls /", Status: Works, OK: true},
		{Name: "sh here-document and $(...)", Status: Broken, Detail: "exit status 1: sh: Operation not permitted",
			Denials: []string{"file-write-create /private/var/tmp/sh-thd.1 (sh)"}},
		{Name: "node os.cpus()", Status: Skipped, OK: true, Detail: "node is not installed here"},
	}
	var b bytes.Buffer
	Print(&b, rs)
	want := `  ls /                         works
  sh here-document and $(...)  broken: exit status 1: sh: Operation not permitted
                                 denied: file-write-create /private/var/tmp/sh-thd.1 (sh)
  node os.cpus()               skipped: node is not installed here
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := PrintJSON(&b, "seatbelt", rs); err != nil || !strings.Contains(b.String(), `"ok": false`) || !strings.Contains(b.String(), `"status": "broken"`) {
		t.Errorf("json: %v\n%s", err, b.String())
	}
}

func TestLoginFileNeverCreated(t *testing.T) {
	home := t.TempDir()
	if got := loginFile(home); got != home {
		t.Errorf("with no ~/.ssh: %q, want the home folder itself", got)
	}
	if _, err := os.Stat(filepath.Join(home, ".ssh")); err == nil {
		t.Error("the check created ~/.ssh")
	}
}

func TestRefusalMustBeReported(t *testing.T) {
	home := t.TempDir()
	probes := Battery(Options{GOOS: "darwin", UserHome: home, ReportsDenials: true})
	var p []Probe
	for _, pr := range probes {
		if pr.Refused && pr.Reported != "" && strings.HasPrefix(pr.Name, "read of ") {
			p = append(p, pr)
		}
	}
	if len(p) != 1 {
		t.Fatalf("%d login-file probes whose denial must be reported", len(p))
	}
	refused := Outcome{ExitCode: 1, Stderr: "ls: Operation not permitted"}
	rs := Run(context.Background(), func(context.Context, string) (Outcome, error) { return refused, nil }, p, Outside{LookPath: found})
	if rs[0].Status != Refused || !rs[0].Unreported {
		t.Errorf("a refusal with no denial in the report: %+v", rs[0])
	}
	var b bytes.Buffer
	Print(&b, rs)
	if !strings.Contains(b.String(), "missing from the command's report") {
		t.Errorf("the line does not say the denial was missing: %s", b.String())
	}
	refused.Denials = []string{"file-read-data " + home + " (ls)"}
	rs = Run(context.Background(), func(context.Context, string) (Outcome, error) { return refused, nil }, p, Outside{LookPath: found})
	if rs[0].Unreported {
		t.Errorf("a reported refusal counted as unreported: %+v", rs[0])
	}
}

// The everyday lines: each judged as it must be on a Mac and on Linux.
func TestEverydayProbes(t *testing.T) {
	tests := []struct {
		goos, probe string
		out         Outcome
		want        string
	}{
		{"darwin", "git --version", Outcome{Stdout: "git version 2.39.5 (Apple Git-154)\n"}, Works},
		{"darwin", "git --version", Outcome{Stdout: "git version 2.39.5\n", Stderr: "xcrun: error: couldn't create cache file '/tmp/xcrun_db-x' (errno=Operation not permitted)\n"}, Broken},
		{"darwin", "cc --version", Outcome{Stdout: "Apple clang version 16.0.0\n"}, Works},
		{"darwin", "cc --version", Outcome{Stdout: "Apple clang version 16.0.0\n", Stderr: "xcrun: error: confstr() failed\n"}, Broken},
		{"darwin", "zsh here-document", Outcome{Stdout: "zsh here\n"}, Works},
		{"darwin", "zsh here-document", Outcome{ExitCode: 1, Stderr: "zsh:1: can't create temp file for here document: operation not permitted\n"}, Broken},
		{"darwin", "ls -l /; date", Outcome{Stdout: "total 10\nTue Dec 1\n"}, Works},
		{"darwin", "ls -l /; date", Outcome{Stdout: "total 10\n", Stderr: "openworker sandbox: Seatbelt denied 1 operation(s) of this command:\n  sysctl-read kern.bootargs (ls)\n"}, Broken},
		{"darwin", "Unix socket in $TMPDIR", Outcome{Stdout: "connected\n"}, Works},
		{"darwin", "Unix socket in $TMPDIR", Outcome{ExitCode: 1, Stderr: "PermissionError: [Errno 1] Operation not permitted\n"}, Broken},
		{"darwin", "server on loopback", Outcome{ExitCode: 1, Stderr: "PermissionError: [Errno 1] Operation not permitted\n"}, Refused},
		{"darwin", "server on loopback", Outcome{Stdout: "listening\n"}, NotRefused},
		{"linux", "server on loopback", Outcome{Stdout: "listening\n"}, Works},
		{"linux", "server on loopback", Outcome{ExitCode: 1}, Broken},
	}
	for _, tt := range tests {
		t.Run(tt.goos+"/"+tt.probe+"/"+tt.want, func(t *testing.T) {
			var p []Probe
			for _, pr := range Battery(Options{GOOS: tt.goos}) {
				if strings.HasPrefix(pr.Name, tt.probe) {
					p = append(p, pr)
				}
			}
			if len(p) != 1 {
				t.Fatalf("%d probes named %q", len(p), tt.probe)
			}
			rs := Run(context.Background(), func(context.Context, string) (Outcome, error) { return tt.out, nil }, p, Outside{LookPath: found})
			if rs[0].Status != tt.want {
				t.Errorf("status %q (%s), want %q", rs[0].Status, rs[0].Detail, tt.want)
			}
		})
	}
}

// A Mac's /usr/bin/java is there with no Java installed: the line is skipped with the reason,
// and never run; with a runtime, it runs and wants a version.
func TestJavaSkippedWithoutARuntime(t *testing.T) {
	find := func(o Options) Probe {
		for _, p := range Battery(o) {
			if p.Name == "java -version" {
				return p
			}
		}
		t.Fatal("no java line")
		return Probe{}
	}
	ran := false
	exec := func(context.Context, string) (Outcome, error) {
		ran = true
		return Outcome{Stderr: `openjdk version "21.0.2" 2024-01-16`}, nil
	}
	missing := find(Options{GOOS: "darwin", JavaMissing: func() string { return "no Java runtime is installed (/usr/libexec/java_home found none)" }})
	rs := Run(context.Background(), exec, []Probe{missing}, Outside{LookPath: found})
	if ran || rs[0].Status != Skipped || !strings.Contains(rs[0].Detail, "no Java runtime") {
		t.Errorf("without a runtime: ran %v, %+v", ran, rs[0])
	}
	there := find(Options{GOOS: "darwin", JavaMissing: func() string { return "" }})
	if rs := Run(context.Background(), exec, []Probe{there}, Outside{LookPath: found}); !ran || rs[0].Status != Works {
		t.Errorf("with a runtime: ran %v, %+v", ran, rs[0])
	}
}

// On a Mac, ps is refused for being set-user-ID, whatever the wall allows, so the probe of
// another process's command line reads kern.procargs2 itself, through Python's ctypes, and
// its line says so. A refusal is judged by what it showed.
func TestProcargsProbeOnAMac(t *testing.T) {
	var p Probe
	for _, pr := range Battery(Options{GOOS: "darwin", OutsidePID: 4242, OutsideArg: "sandbox check"}) {
		if strings.HasPrefix(pr.Name, "command line of a process outside") {
			p = pr
		}
	}
	if !strings.Contains(p.Name, "kern.procargs2") || p.Needs != "python3" || strings.Contains(p.Command, "ps -") ||
		!strings.Contains(p.Command, "4242") || !strings.Contains(p.Command, "ctypes") {
		t.Fatalf("probe %+v", p)
	}
	for _, tt := range []struct {
		name string
		out  Outcome
		want string
	}{
		{"refused", Outcome{ExitCode: 1, Stderr: "PermissionError: [Errno 1] sysctl kern.procargs2: Operation not permitted"}, Refused},
		{"read", Outcome{Stdout: "/Applications/OpenWorker.app/Contents/MacOS/openworker sandbox check"}, NotRefused},
		// A python3 that never got to the sysctl (the developer tools' stub, with nothing
		// installed) proves nothing either way.
		{"no_python", Outcome{ExitCode: 1, Stderr: "xcode-select: note: No developer tools were found, requesting install."}, Failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := Run(context.Background(), func(context.Context, string) (Outcome, error) { return tt.out, nil }, []Probe{p}, Outside{LookPath: found})
			if rs[0].Status != tt.want {
				t.Errorf("%+v, want %s", rs[0], tt.want)
			}
		})
	}
	// The script is Python this machine's python3 compiles (it runs only on a Mac).
	if _, err := exec.LookPath("python3"); err == nil {
		script := p.Command[strings.Index(p.Command, "'")+1 : strings.LastIndex(p.Command, "'")]
		if out, err := exec.Command("python3", "-c", "import sys; compile(sys.argv[1], 'probe', 'exec')", script).CombinedOutput(); err != nil {
			t.Errorf("the probe's Python does not compile: %v\n%s", err, out)
		}
	}
}

// The review's open questions a first run on a Mac answers: whether an x86_64 program runs
// under Rosetta behind the wall (skipped where there is no Rosetta), and who logs a refused
// service lookup (open's), which the report's denial line names.
func TestMacQuestions(t *testing.T) {
	byName := func(o Options) map[string]Probe {
		m := map[string]Probe{}
		for _, p := range Battery(o) {
			m[p.Name] = p
		}
		return m
	}
	mac := byName(Options{GOOS: "darwin", ReportsDenials: true, RosettaMissing: func() string { return "" }})
	rosetta, ok := mac["an x86_64 program under Rosetta"]
	if !ok || rosetta.Command != "arch -x86_64 /usr/bin/true" || rosetta.Skip == nil {
		t.Errorf("Rosetta line: %+v", rosetta)
	}
	open, ok := mac["open -g . (a service lookup the wall refuses)"]
	if !ok || !open.Refused || open.Reported != "mach-lookup" {
		t.Errorf("open line: %+v", open)
	}
	// Whether Seatbelt matches the data volume's spelling of a path or the firmlinked one:
	// the profile denies it whole, and the denial names the spelling Seatbelt saw.
	data, ok := mac["ls /System/Volumes/Data/Users (the data volume's path to the home folders)"]
	if !ok || data.Command != "ls /System/Volumes/Data/Users" || !data.Refused || data.Reported != "/Users" {
		t.Errorf("data volume line: %+v", data)
	}
	if _, ok := byName(Options{GOOS: "darwin"})["an x86_64 program under Rosetta"]; ok {
		t.Error("the Rosetta line without a way to tell whether Rosetta is there")
	}
	for name := range byName(Options{GOOS: "linux", RosettaMissing: func() string { return "" }}) {
		if strings.Contains(name, "Rosetta") || strings.HasPrefix(name, "open -g") || strings.Contains(name, "/System/Volumes/Data") {
			t.Errorf("a Mac's line on Linux: %s", name)
		}
	}
}

// A program found outside that the sandbox cannot find (a toolchain in the home folder that
// is not switched on) says where it is outside and what makes it readable.
func TestNotFoundInsideSaysWhere(t *testing.T) {
	p := Probe{Name: "cargo build of a one-file crate", Command: "cargo build", Needs: "cargo", Judge: wantOutput("built")}
	look := func(string) (string, error) { return "/Users/me/.cargo/bin/cargo", nil }
	rs := Run(context.Background(), func(context.Context, string) (Outcome, error) {
		return Outcome{ExitCode: 127, Stderr: "sh: cargo: command not found"}, nil
	}, []Probe{p}, Outside{LookPath: look})
	if rs[0].Status != Broken || !strings.Contains(rs[0].Detail, "outside the sandbox it is /Users/me/.cargo/bin/cargo") {
		t.Errorf("%+v", rs[0])
	}
}

// A program that must run and did not is tried outside the wall too: one that fails there as
// well (rustup's cargo with no default toolchain for this home) is not the wall's doing, and
// one found only where sessions do not see it says what makes it readable; only one that
// works outside and fails inside is broken. One that works inside is not run outside.
func TestToolTriedOutside(t *testing.T) {
	const rustup = "error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, and no default is configured."
	p := Probe{Name: "cargo build of a one-file crate", Command: "cargo build", Needs: "cargo", Judge: wantOutput("built by cargo")}
	look := func(string) (string, error) { return "/home/me/.cargo/bin/cargo", nil }
	advice := func(dir string) string { return "switch on the toolchain for " + dir }
	built := Outcome{Stdout: "built by cargo\n"}
	tests := []struct {
		name            string
		inside, outside Outcome
		want            string
		detail          []string
		ranOutside      bool
	}{
		{"fails_outside_too", Outcome{ExitCode: 1, Stderr: rustup}, Outcome{ExitCode: 1, Stderr: "\n" + rustup + "\nhelp: run 'rustup default stable'\n\nStack backtrace:\n  13: <unknown>\n"}, Skipped,
			[]string{"fails outside the sandbox too (exit status 1: " + rustup[:40]}, true},
		{"not_found_inside_fails_outside_too", Outcome{ExitCode: 127, Stderr: "sh: 1: cargo: not found"}, Outcome{ExitCode: 1, Stderr: rustup}, Skipped,
			[]string{"fails outside the sandbox too"}, true},
		{"not_seen_inside", Outcome{ExitCode: 127, Stderr: "sh: 1: cargo: not found"}, built, Skipped,
			[]string{"/home/me/.cargo/bin", "which sessions do not see", "switch on the toolchain for /home/me/.cargo/bin"}, true},
		{"wrong_output_outside_too", Outcome{Stdout: "nothing"}, Outcome{Stdout: "nothing"}, Skipped,
			[]string{"fails outside the sandbox too (its output"}, true},
		{"broken_by_the_wall", Outcome{ExitCode: 101, Stderr: "error: Permission denied (os error 13)"}, built, Broken,
			[]string{"exit status 101: error: Permission denied"}, true},
		{"works", built, Outcome{ExitCode: 1}, Works, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ranOutside := false
			outside := func(_ context.Context, cmd string) (Outcome, error) {
				if cmd != p.Command {
					t.Errorf("outside ran %q, want the probe's command", cmd)
				}
				ranOutside = true
				return tt.outside, nil
			}
			rs := Run(context.Background(), func(context.Context, string) (Outcome, error) { return tt.inside, nil }, []Probe{p},
				Outside{LookPath: look, Exec: outside, Advice: advice})
			r := rs[0]
			if r.Status != tt.want || r.OK != (tt.want != Broken) || ranOutside != tt.ranOutside {
				t.Errorf("%+v (ran outside %v), want %s", r, ranOutside, tt.want)
			}
			for _, d := range tt.detail {
				if !strings.Contains(r.Detail, d) {
					t.Errorf("detail %q lacks %q", r.Detail, d)
				}
			}
			if OK(rs) != (tt.want != Broken) {
				t.Errorf("OK = %v", OK(rs))
			}
		})
	}
	// What must be refused is never tried outside: it would be an escape there.
	refused := Probe{Name: "read of a login file", Command: "head -c 0 -- x", Needs: "head", Refused: true}
	Run(context.Background(), func(context.Context, string) (Outcome, error) { return Outcome{}, nil }, []Probe{refused},
		Outside{LookPath: look, Exec: func(context.Context, string) (Outcome, error) {
			t.Error("a probe that must be refused was run outside")
			return Outcome{}, nil
		}})
}

// The line of the tools a session finds on its PATH says which, and whether the language is
// UTF-8, without a value of the environment: what an app started by launchd gives its
// sessions shows in a report.
func TestToolsOnPath(t *testing.T) {
	var p Probe
	for _, pr := range Battery(Options{GOOS: "darwin"}) {
		if pr.Name == "tools on the session's PATH" {
			p = pr
		}
	}
	if !p.Info || strings.Contains(p.Command, "$PATH") || strings.Contains(p.Command, "echo $LANG") {
		t.Fatalf("probe %+v", p)
	}
	rs := Run(context.Background(), func(context.Context, string) (Outcome, error) {
		return Outcome{Stdout: "found: node python3 git; not found: go cargo npm\nUTF-8 locale\n"}, nil
	}, []Probe{p}, Outside{LookPath: found})
	if rs[0].Status != Works || !rs[0].Info || rs[0].Detail != "found: node python3 git; not found: go cargo npm; UTF-8 locale" {
		t.Errorf("%+v", rs[0])
	}
	var b bytes.Buffer
	Print(&b, rs)
	if !strings.Contains(b.String(), "works: found: node python3 git") {
		t.Errorf("printed %q", b.String())
	}
	if _, err := exec.LookPath("sh"); err == nil {
		out, err := exec.Command("sh", "-c", p.Command).Output()
		if err != nil || !strings.HasPrefix(string(out), "found: ") {
			t.Errorf("the command here: %v %q", err, out)
		}
	}
}
