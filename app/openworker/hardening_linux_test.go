package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a new user hits first, through the real binary behind the real wall.

func TestRunCommandsThatCannotStart(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	os.WriteFile(filepath.Join(w.project, "script.py"), []byte("print(1)\n"), 0o644)
	for _, tc := range []struct {
		argv   []string
		code   int
		stderr string
	}{
		{[]string{"nosuchcmd"}, 127, "nosuchcmd: command not found"},
		{[]string{"./script.py"}, 126, "./script.py: permission denied"},
		{[]string{"./nosuchfile"}, 127, "./nosuchfile: no such file"},
	} {
		_, errs, code := w.run(append([]string{"run", "--"}, tc.argv...)...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) || strings.Contains(errs, "panic") {
			t.Errorf("run -- %v: exit %d, stderr %q; want %d and %q", tc.argv, code, errs, tc.code, tc.stderr)
		}
	}
}

func TestRunKeepsTheCurrentFolder(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	data, other := filepath.Join(filepath.Dir(w.project), "data"), filepath.Join(filepath.Dir(w.project), "other")
	os.Mkdir(data, 0o755)
	os.Mkdir(other, 0o755)
	// --ro alone keeps the current folder writable and the working folder.
	out, errs, code := w.run("run", "--ro", "../data", "--", "sh", "-c", "pwd; echo kept > written.txt")
	if code != 0 || strings.TrimSpace(out) != w.project {
		t.Fatalf("run --ro ../data: exit %d, pwd %q, %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(w.project, "written.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("the write into the current folder was lost: %v %q", err, b)
	}
	out, errs, code = w.run("run", "--rw", "../other", "--rw", ".", "--", "pwd")
	if code != 0 || strings.TrimSpace(out) != w.project {
		t.Fatalf("run --rw ../other --rw .: exit %d, pwd %q, %s", code, out, errs)
	}
	// A --rw names the writable folders: the current folder is not shared unless --rw .
	// says so, and the command starts in the first one.
	out, errs, code = w.run("run", "--rw", "../other", "--", "sh", "-c", "pwd; ls "+w.project)
	if code == 0 || !strings.HasPrefix(out, other+"\n") {
		t.Fatalf("run --rw ../other: exit %d, %q %s; want to start in ../other without the current folder", code, out, errs)
	}
	// --no-cwd shares only what was given.
	out, errs, code = w.run("run", "--no-cwd", "--rw", "../other", "--", "sh", "-c", "pwd; ls "+w.project)
	if code == 0 || !strings.Contains(out, other) {
		t.Fatalf("run --no-cwd: exit %d, %q %s; want to start in ../other without the current folder", code, out, errs)
	}
	// The home folder as the current folder is refused, with what to do.
	c := w.cmd("run", "--", "ls")
	c.Dir = w.home
	b, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "is your home folder") || !strings.Contains(string(b), "cd to a project folder") || strings.Contains(string(b), "--rw "+w.home) {
		t.Fatalf("run from the home folder: %v\n%s", err, b)
	}
}

func TestRunPassesStandardInput(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	c := w.cmd("run", "--", "cat")
	big := strings.Repeat("0123456789abcdef", 1<<17) // 2 MiB, more than the window
	c.Stdin = strings.NewReader("hi\n" + big)
	out, err := c.Output()
	if err != nil || string(out) != "hi\n"+big {
		t.Fatalf("echo hi | run -- cat: %v, %d bytes back of %d", err, len(out), len(big)+3)
	}
}

// An interrupted run passes the signal to the command, whose cleanup runs, and exits as a
// shell does for that signal, saying so.
func TestRunForwardsSignals(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "INT", 130}, {syscall.SIGTERM, "TERM", 143}, {syscall.SIGHUP, "HUP", 129}} {
		t.Run(tc.name, func(t *testing.T) {
			cleaned := filepath.Join(w.project, "cleaned-"+tc.name)
			c := w.cmd("run", "--", "sh", "-c", "trap 'echo cleaned > "+cleaned+"; exit 7' "+tc.name+"; echo started; while :; do sleep 0.05; done")
			stdout, _ := c.StdoutPipe()
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
				c.Process.Kill()
				c.Wait()
				t.Fatalf("first line %q", line)
			}
			c.Process.Signal(tc.sig)
			err := c.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != tc.code {
				t.Fatalf("after SIG%s: %v, want exit %d\n%s", tc.name, err, tc.code, errb.String())
			}
			if b, err := os.ReadFile(cleaned); err != nil || string(b) != "cleaned\n" {
				t.Fatalf("the command's trap did not run: %v", err)
			}
			if !strings.Contains(errb.String(), "openworker: interrupted (SIG"+tc.name+")") {
				t.Fatalf("no line saying it was interrupted:\n%s", errb.String())
			}
		})
	}
	out, _, _ := w.run("audit")
	if !strings.Contains(out, "(interrupted)") {
		t.Fatalf("the interrupted runs have no end record in the audit trail:\n%s", out)
	}
}

func TestTimeoutFlag(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if _, errs, code := w.run("run", "--timeout", "5", "--", "true"); code != 0 {
		t.Fatalf("--timeout 5: exit %d %s", code, errs)
	}
	_, errs, code := w.run("run", "--timeout", "0.2", "--", "sleep", "5")
	if code == 0 || !strings.Contains(errs, "stopped after 200ms (--timeout)") {
		t.Fatalf("--timeout 0.2: exit %d %s", code, errs)
	}
	for _, bad := range []string{"-1", "-5s", "soon"} {
		if _, errs, code := w.run("run", "--timeout", bad, "--", "true"); code != 2 || !strings.Contains(errs, "timeout") || !strings.Contains(errs, "run --help") {
			t.Errorf("--timeout %s: exit %d %s; want a usage error", bad, code, errs)
		}
	}
}

// One rule for which wall a session gets: the daemon's sessions follow sandbox_provider,
// run is a person's choice of the sandbox.
func TestProviderRule(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	out, _, _ := w.run("run", "--", "sh", "-c", "ls "+w.home+" || echo walled")
	if !strings.Contains(out, "walled") {
		t.Fatalf("run without --provider did not get the wall: %q", out)
	}
	out, _, _ = w.run("run", "--provider", "direct", "--", "sh", "-c", "ls -a "+w.home)
	if !strings.Contains(out, ".ssh") {
		t.Fatalf("run --provider direct is walled: %q", out)
	}
	status, _, _ := w.run("machine", "sandbox", "status")
	if !strings.Contains(status, "the app's and the daemon's sessions: direct, no wall") || !strings.Contains(status, "openworker run and openworker mcp: linux unless --provider direct") {
		t.Fatalf("status does not give the rule:\n%s", status)
	}
	_, stop := w.daemon()
	id, errs, code := w.run("session", "start")
	if code != 0 || !strings.Contains(errs, "(direct: no sandbox, nothing enforced)") {
		stop()
		t.Fatalf("a daemon session with the default settings: %d %s", code, errs)
	}
	w.run("session", "end", strings.TrimSpace(id))
	stop()
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop = w.daemon()
	defer stop()
	id, errs, code = w.run("session", "start")
	if code != 0 || !strings.Contains(errs, "(linux sandbox, allowlist network)") {
		t.Fatalf("a daemon session with sandbox_provider = linux: %d %s", code, errs)
	}
	w.run("session", "end", strings.TrimSpace(id))
	status, _, _ = w.run("machine", "sandbox", "status")
	if !strings.Contains(status, "the app's and the daemon's sessions: linux (sandbox_provider)") {
		t.Fatalf("status after turning the sandbox on:\n%s", status)
	}
}

// A broken settings file keeps the last good settings in force everywhere, and every
// surface says so.
func TestBrokenSettingsKeepTheLastGood(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.settings("sandbox_provider = \"linux\"\nsandbox_network_hosts = [\"github.com:443\"]\n")
	if _, errs, code := w.run("config", "show"); code != 0 {
		t.Fatalf("config show: %s", errs)
	}
	w.settings("sandbox_provider = \"linux\"\nsandbox_network_profile = \"opne\"\n")
	out, _, code := w.run("config", "show")
	if code != 0 || !strings.Contains(out, "has problems; the last good settings stay in force") || !strings.Contains(out, "config.toml:2:") || !strings.Contains(out, "github.com:443") {
		t.Fatalf("config show with a broken file: %d\n%s", code, out)
	}
	status, _, _ := w.run("machine", "sandbox", "status")
	if !strings.Contains(status, "the last good settings stay in force") || !strings.Contains(status, "linux (sandbox_provider)") {
		t.Fatalf("status with a broken file:\n%s", status)
	}
	out, errs, code := w.run("run", "--", "echo", "ran")
	if code != 0 || out != "ran\n" || !strings.Contains(errs, "the last good settings stay in force") {
		t.Fatalf("run with a broken file: %d %q %s", code, out, errs)
	}
	_, stop := w.daemon()
	defer stop()
	id, errs, code := w.run("session", "start")
	if code != 0 || !strings.Contains(errs, "(linux sandbox, allowlist network)") {
		t.Fatalf("a daemon session with a broken file: %d %s", code, errs)
	}
	w.run("session", "end", strings.TrimSpace(id))
}

func TestSessionExecArgvInputAndInterrupt(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	os.WriteFile(filepath.Join(w.project, "g.txt"), []byte("foo bar\nfoo\nbar\n"), 0o644)
	// After --, an argv: "foo bar" stays one argument.
	out, errs, code := w.run("session", "exec", id, "--", "grep", "foo bar", "g.txt")
	if code != 0 || out != "foo bar\n" {
		t.Fatalf("exec -- grep \"foo bar\" g.txt: %d %q %s", code, out, errs)
	}
	// Flags after the ID and after the command's words.
	if _, errs, code := w.run("session", "exec", "--timeout", "5", id, "true"); code != 0 {
		t.Fatalf("flags before the ID: %d %s", code, errs)
	}
	c := w.cmd("session", "exec", id, "--", "cat")
	c.Stdin = strings.NewReader("through the daemon\n")
	if b, err := c.Output(); err != nil || string(b) != "through the daemon\n" {
		t.Fatalf("stdin to session exec: %v %q", err, b)
	}
	// Output streamed whole is not said to be left out.
	out, errs, code = w.run("session", "exec", id, "yes | head -c 20000000")
	if code != 0 || len(out) != 20000000 || strings.Contains(errs, "left out") {
		t.Fatalf("20 MB streamed: %d, %d bytes, %s", code, len(out), errs)
	}
	// Ctrl-C reaches the command; a second exec meanwhile is refused with a message.
	cleaned := filepath.Join(w.project, "cleaned")
	long := w.cmd("session", "exec", id, "trap 'echo cleaned > "+cleaned+"; exit 3' INT; echo started; while :; do sleep 0.05; done")
	stdout, _ := long.StdoutPipe()
	var longErr bytes.Buffer
	long.Stderr = &longErr
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		long.Process.Kill()
		long.Wait()
		t.Fatalf("first line %q %s", line, longErr.String())
	}
	_, errs, code = w.run("session", "exec", id, "true")
	if code == 0 || !strings.Contains(errs, "is running another command") {
		t.Errorf("a second exec meanwhile: %d %s", code, errs)
	}
	long.Process.Signal(os.Interrupt)
	err := long.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("after Ctrl-C: %v, want 130\n%s", err, longErr.String())
	}
	if b, _ := os.ReadFile(cleaned); string(b) != "cleaned\n" {
		t.Fatal("the command's INT trap did not run")
	}
	if out, errs, code := w.run("session", "exec", id, "echo next"); code != 0 || out != "next\n" {
		t.Fatalf("the session after an interrupt: %d %q %s", code, out, errs)
	}
}

func TestSessionReadReadsWhatWasAsked(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	big := bytes.Repeat([]byte("0123456789"), 1_000_000) // 10 MB, more than one read call
	os.WriteFile(filepath.Join(w.project, "big"), big, 0o644)
	out, errs, code := w.run("session", "read", id, "big")
	if code != 0 || out != string(big) {
		t.Fatalf("read of 10 MB: %d, %d bytes, %s", code, len(out), errs)
	}
	out, _, code = w.run("session", "read", id, "big", "--offset", "5", "--limit", "9000000")
	if code != 0 || out != string(big[5:9000005]) {
		t.Fatalf("read --limit 9000000: %d, %d bytes", code, len(out))
	}
}

// Every subcommand's --help prints its usage with an example and exits 0, with nothing
// else done: no daemon needed, no file opened, no sandbox started.
func TestHelpEverywhere(t *testing.T) {
	w := newWorld(t)
	for _, args := range [][]string{
		{"run"}, {"serve"}, {"audit"}, {"sandbox", "check"}, {"sandbox", "profile"}, {"machine", "sandbox", "status"},
		{"config", "path"}, {"config", "check"}, {"config", "show"},
		{"session", "start"}, {"session", "exec"}, {"session", "read"}, {"session", "write"}, {"session", "list"},
		{"session", "add-folder"}, {"session", "end"}, {"session", "ls"},
	} {
		start := time.Now()
		out, errs, code := w.run(append(args, "--help")...)
		if code != 0 || !strings.HasPrefix(out, "Usage: openworker "+strings.Join(args, " ")) || !strings.Contains(out, "Example:") || errs != "" {
			t.Errorf("%v --help: exit %d\nstdout %s\nstderr %s", args, code, out, errs)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("%v --help took %v", args, time.Since(start))
		}
	}
	if _, err := os.Stat(filepath.Join(w.project, "--help")); err == nil {
		t.Error("a --help made a file")
	}
	if _, errs, code := w.run("session", "end", "a", "b"); code == 0 || !strings.Contains(errs, `unexpected argument "b"`) {
		t.Errorf("an extra argument: %d %s", code, errs)
	}
}

// What a command writes cannot forge a line of the audit trail or drive the terminal.
func TestAuditShowsCommandsEscaped(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	forged := "2026-01-01 00:00:00  session.ended  forged"
	w.run("run", "--", "sh", "-c", "true\n"+forged+"\x1b[2J")
	out, _, _ := w.run("audit")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "2026-01-01") || strings.Contains(line, "\x1b") {
			t.Fatalf("the audit output holds a forged line or an escape:\n%q", out)
		}
	}
	if !strings.Contains(out, `true\n`+forged+`\x1b[2J`) {
		t.Fatalf("the command is not shown escaped:\n%s", out)
	}
	if _, _, code := w.run("audit", "--since", "1h", "--session", "nosuch"); code != 0 {
		t.Fatal("audit --since --session failed")
	}
}

// The proxy's refusal names the way to allow the site that exists where the command ran.
func TestRefusalNamesTheWayToAllow(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	out, _, _ := w.run("run", "--", "curl", "-sS", "http://blocked.example.com/")
	if !strings.Contains(out, "allow it with openworker run --allow blocked.example.com:80") || strings.Contains(out, "Settings ▸") {
		t.Fatalf("run's refusal body: %q", out)
	}
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop := w.daemon()
	defer stop()
	id, _, _ := w.run("session", "start")
	id = strings.TrimSpace(id)
	defer w.run("session", "end", id)
	out, errs, _ := w.run("session", "exec", id, "curl -sS http://blocked.example.com/")
	if !strings.Contains(out, "add blocked.example.com:80 to sandbox_network_hosts in "+filepath.Join(w.home, ".config", "openworker", "config.toml")) ||
		!strings.Contains(out, "openworker access "+id+" --allow blocked.example.com:80") || !strings.Contains(out, "openworker request-site "+id+" blocked.example.com:80") || strings.Contains(out, "Settings ▸") {
		t.Fatalf("a session's refusal body: %q", out)
	}
	if !strings.Contains(errs, "openworker: blocked blocked.example.com:80") {
		t.Fatalf("no after-command report: %s", errs)
	}
}

// A symlinked current folder is resolved once and the command starts there.
func TestRunInASymlinkedFolder(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	link := filepath.Join(filepath.Dir(w.project), "link")
	if err := os.Symlink(w.project, link); err != nil {
		t.Fatal(err)
	}
	c := w.cmd("run", "--", "sh", "-c", "pwd; echo via-link > made.txt")
	c.Dir = link
	c.Env = append(c.Env, "PWD="+link) // as a shell that cd'd into the link says
	out, err := c.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != w.project {
		t.Fatalf("run in a symlinked folder: %v %q", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(w.project, "made.txt")); string(b) != "via-link\n" {
		t.Fatal("the write through the symlinked folder was lost")
	}
}

// walledSession starts a daemon whose sessions get the wall, and one session of it, both
// ended when the test ends; it returns the session's ID.
func (w *world) walledSession() string {
	w.t.Helper()
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop := w.daemon()
	w.t.Cleanup(stop)
	id, errs, code := w.run("session", "start")
	if code != 0 {
		w.t.Fatalf("session start: %s", errs)
	}
	id = strings.TrimSpace(id)
	w.t.Cleanup(func() { w.run("session", "end", id) })
	return id
}
