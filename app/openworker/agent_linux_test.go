package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standIn makes a stand-in for the agent host name: a script that does what body says with
// the routing openworker agent gives it ($CLAUDE_CODE_SHELL_PREFIX is the shell).
func standIn(t *testing.T, name, body string) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir + ":" + os.Getenv("PATH")}
}

// A session that cannot start leaves the host running, and its shell refusing every command
// with the reason, on the host's own output too: nothing runs outside. Claude Code's shell is
// its prefix; gemini-cli's, the bash first on its PATH.
func TestAgentRefusedSessionRunsNothing(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	ran := filepath.Join(w.home, "ran")
	for host, shell := range map[string]string{
		"claude": `"$CLAUDE_CODE_SHELL_PREFIX" "touch ` + ran + `"`,
		"gemini": `bash -c "touch ` + ran + `"`,
	} {
		t.Run(host, func(t *testing.T) {
			env := standIn(t, host, shell+`; echo "shell status $?"`)
			c := w.cmd("agent", host)
			c.Dir = w.home // the home folder is never a session's
			c.Env = append(c.Env, env...)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the command ran outside the sandbox")
			}
			for _, want := range []string{"the session could not start", "shell refuses every command", "nothing was run", "home folder", "shell status 126"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%q is not in:\n%s", want, out)
				}
			}
		})
	}
}

// The host's signals reach the command in the session, and a shell the host kills outright
// (SIGKILL, which it cannot pass on) still takes its command with it: nothing is left
// running behind the wall.
func TestAgentShellEndsWhatItStarted(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	termed := filepath.Join(w.project, "termed")
	env := standIn(t, "claude", `
"$CLAUDE_CODE_SHELL_PREFIX" "trap 'echo term > `+termed+`; exit 3' TERM; touch up1; while :; do sleep 0.1; done # marker-one" &
s1=$!
while [ ! -e up1 ]; do sleep 0.05; done
kill -TERM $s1; wait $s1; echo "first status $?"
"$CLAUDE_CODE_SHELL_PREFIX" "touch up2; sleep 300 # marker-two" &
s2=$!
while [ ! -e up2 ]; do sleep 0.05; done
kill -KILL $s2
for i in $(seq 100); do pgrep -f marker-two >/dev/null || break; sleep 0.1; done
pgrep -f marker-two >/dev/null && echo "still running" || echo "second gone"`)
	c := w.cmd("agent", "claude")
	c.Env = append(c.Env, env...)
	done := make(chan []byte, 1)
	go func() {
		out, _ := c.CombinedOutput()
		done <- out
	}()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the stand-in host did not end")
	}
	if b, err := os.ReadFile(termed); err != nil || string(b) != "term\n" {
		t.Errorf("the host's SIGTERM did not reach the command's trap: %q %v\n%s", b, err, out)
	}
	if !strings.Contains(string(out), "first status 3") || !strings.Contains(string(out), "second gone") {
		t.Errorf("%s", out)
	}
	noProcess(t, "marker-")
}

// Two hosts in two projects at once never share a session: each one's commands run in its
// own project, which is the other's nowhere.
func TestAgentTwoHostsTwoSessions(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	other := filepath.Join(filepath.Dir(w.project), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	env := standIn(t, "claude", `"$CLAUDE_CODE_SHELL_PREFIX" "sleep 0.5; pwd > where; ls .. > seen; echo \$OPENWORKER_SESSION"; "$CLAUDE_CODE_SHELL_PREFIX" "echo session-\$(cat where)"`)
	outs := make(chan string, 2)
	for _, dir := range []string{w.project, other} {
		c := w.cmd("agent", "claude")
		c.Dir = dir
		c.Env = append(c.Env, env...)
		go func() {
			out, err := c.CombinedOutput()
			outs <- string(out) + func() string {
				if err != nil {
					return err.Error()
				}
				return ""
			}()
		}()
	}
	for i := 0; i < 2; i++ {
		select {
		case <-outs:
		case <-time.After(60 * time.Second):
			t.Fatal("a host did not end")
		}
	}
	for _, dir := range []string{w.project, other} {
		b, err := os.ReadFile(filepath.Join(dir, "where"))
		if err != nil || strings.TrimSpace(string(b)) != dir {
			t.Errorf("%s: %q %v", dir, b, err)
		}
		seen, _ := os.ReadFile(filepath.Join(dir, "seen"))
		for _, name := range []string{"project", "other"} {
			if filepath.Base(dir) != name && strings.Contains(string(seen), name+"\n") {
				t.Errorf("the session of %s sees %s: %q", dir, name, seen)
			}
		}
	}
}

// A daemon killed under a host's session is started again with a new session for the host,
// and the host's next command goes there: the host's shell finds it by its owner.
func TestAgentSurvivesItsDaemon(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	env := standIn(t, "claude", `
"$CLAUDE_CODE_SHELL_PREFIX" "echo first > first"
pkill -KILL -f "^`+binary+` serve --exit-when-idle"
sleep 1
"$CLAUDE_CODE_SHELL_PREFIX" "echo second > second"; echo "second status $?"`)
	c := w.cmd("agent", "claude")
	c.Env = append(c.Env, env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"first", "second"} {
		if _, err := os.Stat(filepath.Join(w.project, f)); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
	if !strings.Contains(string(out), "second status 0") || !strings.Contains(string(out), "daemon stopped under session") {
		t.Errorf("%s", out)
	}
}
