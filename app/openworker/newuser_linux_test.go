package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// What a new user meets after the README's first commands, through the real binary.

// After --, session exec's words are an argv whatever their count, as run takes them: one
// word is a program's name, never a shell command.
func TestSessionExecOneWordAfterDashDashIsAnArgv(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	tool := filepath.Join(w.project, "bin dir", "my tool")
	if err := os.MkdirAll(filepath.Dir(tool), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errs, code := w.run("session", "exec", id, "--", "./bin dir/my tool")
	if code != 0 || out != "tool ran\n" {
		t.Errorf(`exec -- "./bin dir/my tool": exit %d, stdout %q, stderr %q`, code, out, errs)
	}
	_, errs, code = w.run("session", "exec", id, "--", `touch "$(echo pwned)"`)
	if code != 127 || !strings.Contains(errs, "command not found") {
		t.Errorf(`exec -- 'touch "$(echo pwned)"': exit %d, stderr %q; want 127 and command not found`, code, errs)
	}
	if _, err := os.Lstat(filepath.Join(w.project, "pwned")); err == nil {
		t.Error(`exec -- 'touch "$(echo pwned)"' ran a shell: the file pwned was made`)
	}
	_, errs, code = w.run("session", "exec", id, "--", "nosuchcmd")
	if code != 127 || !strings.Contains(errs, "nosuchcmd: command not found") || strings.Contains(errs, "eval") {
		t.Errorf("exec -- nosuchcmd: exit %d, stderr %q; want 127 and what run says", code, errs)
	}
	// Several words without -- are neither: the message shows both forms.
	if _, errs, code := w.run("session", "exec", id, "echo", "hi"); code != 2 || !strings.Contains(errs, "after --") {
		t.Errorf("exec echo hi: exit %d, stderr %q; want a usage error showing --", code, errs)
	}
	// Without --, one word is still a shell command, whose cd carries over.
	if out, errs, code := w.run("session", "exec", id, "cd 'bin dir' && pwd"); code != 0 || out != filepath.Join(w.project, "bin dir")+"\n" {
		t.Errorf("exec 'cd ... && pwd': exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// add-folder on a busy session is answered at once, as exec is, and a person who gives up
// on an add-folder does not end the session. Every session.ended record says why.
func TestSessionAddFolderBusyAndGivenUp(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	extra := filepath.Join(filepath.Dir(w.project), "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	long := w.cmd("session", "exec", id, "--", "sh", "-c", "echo started; exec sleep 600")
	stdout, _ := long.StdoutPipe()
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	defer long.Process.Kill()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		t.Fatalf("first line %q", line)
	}
	start := time.Now()
	_, errs, code := w.runWithin(10*time.Second, "", "session", "add-folder", id, extra)
	if code == 0 || !strings.Contains(errs, "is running another command") || time.Since(start) > 5*time.Second {
		t.Errorf("add-folder on a busy session: exit %d after %v, stderr %q; want a refusal at once, as exec's", code, time.Since(start), errs)
	}
	long.Process.Signal(os.Interrupt)
	long.Wait()
	// Given up at any moment of its restart, add-folder leaves a running session.
	for _, after := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
		c := w.cmd("session", "add-folder", id, "--ro", extra)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		c.Process.Signal(os.Interrupt)
		c.Wait()
		tstest.WaitFor(t, 20*time.Second, func() error {
			out, errs, code := w.run("session", "exec", id, "echo alive")
			if code != 0 || out != "alive\n" {
				return fmt.Errorf("the session after an add-folder given up after %v: exit %d %q %s", after, code, out, errs)
			}
			return nil
		})
	}
	if _, errs, code := w.run("session", "end", id); code != 0 {
		t.Fatalf("session end: %s", errs)
	}
	b, err := os.ReadFile(filepath.Join(w.state, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct{ Type, Session, Reason string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if e.Type != "session.ended" {
			continue
		}
		if e.Reason == "" {
			t.Errorf("session.ended without its reason: %s", line)
		}
		if e.Session == id {
			ended++
		}
	}
	if ended != 1 {
		t.Errorf("%d session.ended records for one session end:\n%s", ended, b)
	}
}

// A word that is not one of the card's answers, typed on the command line, is an error that
// leaves the card waiting: a typo never denies a site.
func TestAnswerTypoLeavesTheCardPending(t *testing.T) {
	cw := newCardsWorld(t, "")
	ask := cw.cmd("request-site", cw.id, cw.origin, "--reason", "fixtures", "--wait", "60s")
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { ask.Process.Kill(); ask.Wait() }()
	card, _ := cw.pendingCard(cw.origin)
	for _, word := range []string{"sesion", "Session", "once"} {
		out, errs, code := cw.run("answer", card, word)
		if code == 0 || !strings.Contains(errs, "session, always, deny") || strings.Contains(out, "denied") {
			t.Errorf("answer %s on a command card: exit %d, stdout %q, stderr %q; want an error naming the answers", word, code, out, errs)
		}
		if cards, _, _ := cw.run("cards"); !strings.Contains(cards, card) {
			t.Fatalf("after answer %s the card is no longer pending:\n%s", word, cards)
		}
	}
	if out, errs, code := cw.run("answer", card, "deny"); code != 0 || !strings.Contains(out, "denied") {
		t.Fatalf("answer deny: exit %d %q %s", code, out, errs)
	}
}

// checkLeftovers are the check folders and the tmpfs mounts on private tmp folders that are
// there now and were not in before, and are the check's: in a check folder, or a session's
// that state (the check's state folder) records. Other packages' tests run at the same time
// and mount private tmp folders of their own, which come and go.
func checkLeftovers(before map[string]bool, state string) []string {
	var left []string
	dirs, _ := filepath.Glob("/tmp/openworker-check-*")
	for _, d := range dirs {
		if !before[d] {
			left = append(left, d)
		}
	}
	ours := map[string]bool{}
	records, _ := filepath.Glob(filepath.Join(state, "sessions", "*.json"))
	for _, r := range records {
		var rec struct{ Tmp string }
		if b, err := os.ReadFile(r); err == nil && json.Unmarshal(b, &rec) == nil {
			ours[rec.Tmp] = true
		}
	}
	for m := range tmpMounts() {
		if !before["mount "+m] && (ours[m] || strings.HasPrefix(m, "/tmp/openworker-check-")) {
			left = append(left, "mount "+m)
		}
	}
	return left
}

func checkSnapshot() map[string]bool {
	before := map[string]bool{}
	dirs, _ := filepath.Glob("/tmp/openworker-check-*")
	for _, d := range dirs {
		before[d] = true
	}
	for m := range tmpMounts() {
		before["mount "+m] = true
	}
	return before
}

// An interrupted sandbox check (Ctrl-C, a pipe into head that closed, a service manager's
// SIGTERM) leaves no folder and no mount behind; one killed outright has its leftovers
// swept by the next start.
func TestSandboxCheckInterruptedLeavesNothing(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	noLeftovers := func(t *testing.T, what string, before map[string]bool) {
		t.Helper()
		tstest.WaitFor(t, 15*time.Second, func() error {
			if left := checkLeftovers(before, w.state); len(left) > 0 {
				return fmt.Errorf("%s left %v behind", what, left)
			}
			return nil
		})
	}
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		after time.Duration // -1: after the first line
		code  int
	}{
		{"int_at_start", syscall.SIGINT, 30 * time.Millisecond, 130},
		{"int_while_proving", syscall.SIGINT, 100 * time.Millisecond, 130},
		{"int_in_the_battery", syscall.SIGINT, -1, 130},
		{"term_in_the_battery", syscall.SIGTERM, -1, 143},
		{"hup_while_proving", syscall.SIGHUP, 120 * time.Millisecond, 129},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := checkSnapshot()
			c := w.cmd("sandbox", "check")
			stdout, _ := c.StdoutPipe()
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.after < 0 {
				if line, _ := bufio.NewReader(stdout).ReadString('\n'); !strings.HasPrefix(line, "Sandbox: ") {
					t.Fatalf("first line %q", line)
				}
			} else {
				time.Sleep(tc.after)
			}
			c.Process.Signal(tc.sig)
			go io.Copy(io.Discard, stdout)
			err := c.Wait()
			// A signal before the process has set anything up may end it as the signal does;
			// from the first line on, it says so and exits as a shell does.
			ee, ok := err.(*exec.ExitError)
			early := ok && tc.after >= 0 && ee.ExitCode() == -1 && ee.Sys().(syscall.WaitStatus).Signal() == tc.sig
			if ok && !early && ee.ExitCode() != tc.code {
				t.Errorf("exit %d after %v, want %d\n%s", ee.ExitCode(), tc.sig, tc.code, errb.String())
			}
			if tc.after < 0 && (!ok || !strings.Contains(errb.String(), "openworker: interrupted ("+sigName(tc.sig)+")")) {
				t.Errorf("after %v: %v, stderr %q; want a line saying it was interrupted", tc.sig, err, errb.String())
			}
			noLeftovers(t, "sandbox check interrupted by "+tc.sig.String(), before)
		})
	}
	t.Run("pipe_into_head", func(t *testing.T) {
		before := checkSnapshot()
		c := w.cmd("sandbox", "check")
		stdout, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); !strings.HasPrefix(line, "Sandbox: ") {
			t.Fatalf("first line %q", line)
		}
		stdout.Close() // as head does after its line
		c.Wait()
		noLeftovers(t, "sandbox check | head -1", before)
	})
	t.Run("killed_then_swept", func(t *testing.T) {
		before := checkSnapshot()
		for _, after := range []time.Duration{100 * time.Millisecond, -1} {
			c := w.cmd("sandbox", "check")
			stdout, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if after < 0 {
				bufio.NewReader(stdout).ReadString('\n')
			} else {
				time.Sleep(after)
			}
			c.Process.Kill()
			c.Wait()
		}
		if out, errs, code := w.run("sandbox", "check"); code != 0 {
			t.Fatalf("the next check: %d\n%s\n%s", code, out, errs)
		}
		noLeftovers(t, "a killed sandbox check, after the next start", before)
	})
}

// Once run has read the command's name, everything after it is the command's, as after --.
func TestRunCommandWordsAreTheCommands(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	os.WriteFile(filepath.Join(w.project, "f.txt"), nil, 0o644)
	out, errs, code := w.run("run", "echo", "hi", "--timeout", "1")
	if code != 0 || out != "hi --timeout 1\n" {
		t.Errorf("run echo hi --timeout 1: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = w.run("run", "ls", "-la")
	if code != 0 || !strings.Contains(out, "f.txt") {
		t.Errorf("run ls -la: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// Flags before the name are run's.
	out, errs, code = w.run("run", "--timeout", "0.3", "sleep", "5")
	if code == 0 || !strings.Contains(errs, "--timeout") {
		t.Errorf("run --timeout 0.3 sleep 5: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// request-site and fetch say their card's ID while they wait; --wait 0 does not wait; a
// fetch needs a reason, as request-site does.
func TestRequestSiteAndFetchSayTheirCard(t *testing.T) {
	cw := newCardsWorld(t, "")
	for _, args := range [][]string{{"request-site", "--help"}, {"fetch", "--help"}} {
		if out, _, code := cw.run(args...); code != 0 || !strings.Contains(out, "default 1m0s") || !strings.Contains(out, "0: do not wait") {
			t.Errorf("%v: exit %d\n%s; want the default and what 0 means", args, code, out)
		}
	}
	start := time.Now()
	out, errs, code := cw.runWithin(10*time.Second, "", "request-site", cw.id, cw.origin, "--reason", "fixtures", "--wait", "0")
	if code != 4 || strings.TrimSpace(out) != "no answer yet" || time.Since(start) > 5*time.Second {
		t.Errorf("request-site --wait 0: exit %d after %v, stdout %q, stderr %q; want no answer yet at once", code, time.Since(start), out, errs)
	}
	card, _ := cw.pendingCard(cw.origin)
	if !strings.Contains(errs, "card "+card) || strings.Count(errs, "\n") > 2 {
		t.Errorf("request-site --wait 0 does not name its card %s in a line: %q", card, errs)
	}
	cw.run("answer", card, "deny")

	// Waiting, it names the card at once: the person can answer it from that line.
	site := "127.0.0.1:2"
	ask := cw.cmd("request-site", cw.id, site, "--reason", "fixtures", "--wait", "30s")
	stderr, _ := ask.StderrPipe()
	var askOut bytes.Buffer
	ask.Stdout = &askOut
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	defer ask.Process.Kill()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	f := strings.Fields(line)
	if len(f) < 3 || f[1] != "card" {
		t.Fatalf("request-site's first line while it waits: %q; want one naming the card", line)
	}
	if out, errs, code := cw.run("answer", f[2], "session"); code != 0 {
		t.Fatalf("answer %s from request-site's line: %d %s %s", f[2], code, out, errs)
	}
	go io.Copy(io.Discard, stderr)
	if err := ask.Wait(); err != nil || strings.TrimSpace(askOut.String()) != "session" {
		t.Fatalf("request-site after the answer: %v %q", err, askOut.String())
	}

	if _, errs, code := cw.run("fetch", cw.id, "http://"+cw.origin+"/"); code != 2 || !strings.Contains(errs, "--reason") {
		t.Errorf("fetch without --reason: exit %d, stderr %q; want a usage error asking for it", code, errs)
	}
	out, errs, code = cw.runWithin(10*time.Second, "", "fetch", cw.id, "http://127.0.0.1:3/", "--reason", "docs", "--wait", "0")
	if code != 4 || strings.TrimSpace(out) != "no answer yet" || !strings.Contains(errs, "once|session|always|deny") {
		t.Errorf("fetch --wait 0: exit %d, stdout %q, stderr %q; want no answer yet naming the fetch card's answers", code, out, errs)
	}
}

// session exec passes SIGINT, SIGTERM and SIGHUP to its command as run does, and says so in
// one line naming the signal.
func TestSessionExecForwardsSignals(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "INT", 130}, {syscall.SIGTERM, "TERM", 143}, {syscall.SIGHUP, "HUP", 129}} {
		t.Run(tc.name, func(t *testing.T) {
			cleaned := filepath.Join(w.project, "cleaned-"+tc.name)
			c := w.cmd("session", "exec", id, "trap 'echo cleaned > "+cleaned+"; exit 7' "+tc.name+"; echo started; while :; do sleep 0.05; done")
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
				t.Fatalf("the command's %s trap did not run: %v", tc.name, err)
			}
			// (The command's own shell may say "Terminated" of its sleep.)
			if n := strings.Count(errb.String(), "openworker: interrupted (SIG"+tc.name+")"); n != 1 || strings.Count(errb.String(), "openworker:") != 1 {
				t.Fatalf("want one line saying it was interrupted by SIG%s:\n%s", tc.name, errb.String())
			}
		})
	}
}

// A daemon stopped under a running exec says so, and why, on both sides.
func TestDaemonStoppedUnderAnExec(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.settings("sandbox_provider = \"linux\"\n")
	d := w.daemonWithLog()
	if out, errs, code := w.run("session", "ls"); code != 0 || out != "" || !strings.Contains(errs, "no sessions") {
		t.Errorf("session ls with none: exit %d, stdout %q, stderr %q; want a line saying there are none", code, out, errs)
	}
	id, errs, code := w.run("session", "start")
	if code != 0 {
		t.Fatalf("session start: %s", errs)
	}
	id = strings.TrimSpace(id)
	c := w.cmd("session", "exec", id, "echo started; exec sleep 600")
	stdout, _ := c.StdoutPipe()
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		t.Fatalf("first line %q", line)
	}
	d.stop(t)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(errb.String(), "the daemon stopped (SIGTERM)") || strings.Contains(errb.String(), "EOF") {
			t.Errorf("the exec under a stopped daemon: %v, stderr %q; want it to say the daemon stopped, and why", err, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the exec did not end after its daemon stopped")
	}
	log := strings.Join(d.log(), "\n")
	if !strings.Contains(log, "stopping (SIGTERM)") {
		t.Errorf("the daemon's log does not say it stopped, and why:\n%s", log)
	}
}

// A state folder too deep for a Unix socket's path is named as the problem, with the limit
// and the variable that moves it, by serve and by its clients.
func TestServeStatePathTooLong(t *testing.T) {
	w := newWorld(t)
	deep := filepath.Join(w.home, strings.Repeat("d", 60), strings.Repeat("e", 60))
	w.env = append(w.env, "XDG_STATE_HOME="+deep)
	for _, args := range [][]string{{"serve"}, {"session", "ls"}} {
		_, errs, code := w.runWithin(10*time.Second, "", args...)
		if code == 0 || !strings.Contains(errs, "too long") || !strings.Contains(errs, "107") || !strings.Contains(errs, "XDG_STATE_HOME") || strings.Contains(errs, "start it with") {
			t.Errorf("%v with a state folder too deep: exit %d, stderr %q; want the path too long, the limit and the variable", args, code, errs)
		}
	}
}

// Every command's and every group's --help says what it does with an example, on standard
// output, exit 0; help COMMAND is COMMAND --help.
func TestEveryHelpHasAnExample(t *testing.T) {
	w := newWorld(t)
	for _, args := range [][]string{
		{}, {"run"}, {"serve"}, {"mcp"}, {"audit"}, {"version"}, {"cards"}, {"answer"}, {"request-site"}, {"access"}, {"fetch"},
		{"sandbox"}, {"sandbox", "check"}, {"sandbox", "profile"},
		{"machine"}, {"machine", "sandbox"}, {"machine", "sandbox", "status"},
		{"config"}, {"config", "path"}, {"config", "check"}, {"config", "show"},
		{"session"}, {"session", "start"}, {"session", "exec"}, {"session", "read"}, {"session", "write"}, {"session", "list"},
		{"session", "add-folder"}, {"session", "end"}, {"session", "ls"},
		{"sites"}, {"credentials"}, {"credentials", "add-path"},
	} {
		out, errs, code := w.runWithin(10*time.Second, "", append(args, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage") || !strings.Contains(out, "Example") || errs != "" {
			t.Errorf("openworker %s --help: exit %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, out, errs)
		}
	}
	runHelp, _, _ := w.run("run", "--help")
	if out, errs, code := w.run("help", "run"); code != 0 || out != runHelp {
		t.Errorf("openworker help run: exit %d\n%s%s\nwant run --help's:\n%s", code, out, errs, runHelp)
	}
}

// A usage error is said first, on one line starting openworker:, with where the usage is,
// and exits 2, whatever the command.
func TestUsageErrorsInOneStyle(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"sandbox"}, "sandbox needs a command"},
		{[]string{"session"}, "session needs a command"},
		{[]string{"config"}, "config needs a command"},
		{[]string{"machine"}, "machine needs a command"},
		{[]string{"sandbox", "nope"}, `unknown sandbox command "nope"`},
		{[]string{"session", "nope"}, `unknown session command "nope"`},
		{[]string{"run", "--bogus", "true"}, "--bogus"},
		{[]string{"run", "--allow", "--", "true"}, "--allow needs a site"},
		{[]string{"run", "--timeout"}, "--timeout needs a value"},
		{[]string{"session", "end"}, "needs a session ID"},
		{[]string{"session", "end", "a", "b"}, `unexpected argument "b"`},
		{[]string{"answer", "c1"}, "needs a card ID"},
		{[]string{"request-site", "s", "example.com"}, "--reason"},
		{[]string{"audit", "--since", "yesterday-ish"}, "--since"},
		{[]string{"sites"}, "sites needs"},
		{[]string{"credentials"}, "credentials needs"},
	} {
		_, errs, code := w.runWithin(10*time.Second, "", tc.args...)
		if code != 2 || !strings.HasPrefix(errs, "openworker: ") || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.says) || !strings.Contains(errs, "--help") {
			t.Errorf("openworker %s: exit %d, stderr %q; want exit 2 and one line saying %q with where the usage is", strings.Join(tc.args, " "), code, errs, tc.says)
		}
	}
}

// Rough edges a newcomer meets: each says what it found.
func TestRoughEdgesSayWhatTheyFound(t *testing.T) {
	w := newWorld(t)
	if _, errs, code := w.run("sandbox", "profile", "--proxy-port", "99999"); code != 2 || !strings.Contains(errs, "--proxy-port") || !strings.Contains(errs, "65535") {
		t.Errorf("sandbox profile --proxy-port 99999: exit %d, stderr %q; want a usage error naming the range", code, errs)
	}
	w.run("run", "--provider", "direct", "--", "true")
	out, errs, code := w.run("audit", "--session", "nosuch")
	if code != 0 || out != "" || !strings.Contains(errs, "no events") || !strings.Contains(errs, "nosuch") {
		t.Errorf("audit --session nosuch: exit %d, stdout %q, stderr %q; want a line saying there are none", code, out, errs)
	}
}

// sites list and credentials list show what the settings file says without a daemon, and
// say that is what they show.
func TestListsWithoutTheDaemon(t *testing.T) {
	w := newWorld(t)
	w.settings("sandbox_network_hosts = [\"example.org:443\"]\n")
	out, errs, code := w.run("sites", "list")
	if code != 0 || !strings.Contains(out, "example.org:443") || !strings.Contains(errs, "settings file") {
		t.Errorf("sites list without a daemon: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = w.run("credentials", "list")
	if code != 0 || !strings.Contains(out, "Shared with the sandbox") || !strings.Contains(out, "ssh") || !strings.Contains(errs, "settings file") {
		t.Errorf("credentials list without a daemon: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := w.run("sites", "tick", "github"); code == 0 || !strings.Contains(errs, "not running") {
		t.Errorf("sites tick without a daemon: exit %d, stderr %q; want it to say the daemon is not running", code, errs)
	}
}

// session ls shows each folder on a line of its own (a comma is a character a folder's name
// may hold), and a direct session as what it is: no sandbox, whose refusals say so rather
// than name ways to open a site that nothing enforces anyway.
func TestSessionLsAndDirectSessionsSayWhatHolds(t *testing.T) {
	w := newWorld(t)
	_, stop := w.daemon() // sessions without a provider named are direct
	t.Cleanup(stop)
	a, b := filepath.Join(w.project, "a,b"), filepath.Join(w.project, "c")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id, errs, code := w.run("session", "start", "--rw", w.project, "--ro", a, "--ro", b)
	if code != 0 {
		t.Fatalf("session start: %s", errs)
	}
	id = strings.TrimSpace(id)
	t.Cleanup(func() { w.run("session", "end", id) })
	out, errs, code := w.run("session", "ls")
	if code != 0 {
		t.Fatalf("session ls: exit %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"rw " + w.project, "ro " + a, "ro " + b}
	for _, wl := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSpace(l) == wl }) {
			t.Errorf("session ls: no line %q in\n%s", wl, out)
		}
	}
	if !strings.Contains(lines[0], id) || !strings.Contains(lines[0], "no sandbox") || strings.Contains(lines[0], "allowlist") {
		t.Errorf("session ls lists a direct session as %q; want it to say it has no sandbox, not that a list is enforced", lines[0])
	}
	// A site the list refuses, asked for through the proxy that the session's programs are
	// pointed at: nothing is sent anywhere, the proxy refuses before it resolves the name.
	out, _, _ = w.run("session", "exec", id, "curl -s http://refused.invalid/")
	if !strings.Contains(out, "no sandbox") || strings.Contains(out, "openworker access") || strings.Contains(out, "request-site") || strings.Contains(out, "sandbox_network_hosts") {
		t.Errorf("a direct session's refusal says %q; want it to say the session has no sandbox and name no way to open the site", out)
	}
}

// A session's file tools list the root and the folders on the way to its folders, as its
// commands do; the person's home stays unlisted.
func TestSessionListsTheRoot(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	out, errs, code := w.run("session", "list", id, "/")
	if code != 0 || !strings.Contains(out, " usr/") || !strings.Contains(out, " tmp/") {
		t.Errorf("session list / : exit %d, stdout %q, stderr %q; want the wall's root listed", code, out, errs)
	}
	if out, _, code := w.run("session", "list", id, w.home); code == 0 || strings.Contains(out, ".ssh") {
		t.Errorf("session list of the home: exit %d, %q; want it refused", code, out)
	}
}
