package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// daemonLog is `openworker serve` for w with its error output kept, line by line.
type daemonLog struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	ended chan struct{}
}

func (w *world) daemonWithLog() *daemonLog {
	w.t.Helper()
	d := &daemonLog{cmd: w.cmd("serve"), ended: make(chan struct{})}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(d.ended)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			d.mu.Lock()
			d.lines = append(d.lines, sc.Text())
			d.mu.Unlock()
			if strings.Contains(sc.Text(), "serving the local API") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		w.t.Fatal("daemon did not start")
	}
	w.t.Cleanup(func() { d.cmd.Process.Kill(); d.cmd.Wait() })
	return d
}

func (d *daemonLog) log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lines...)
}

// runWithin is w.run bounded in time: a command still running after d fails the test.
func (w *world) runWithin(d time.Duration, stdin string, args ...string) (string, string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c := exec.CommandContext(ctx, binary, args...)
	c.Env, c.Dir = w.env, w.project
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ctx.Err() != nil {
		w.t.Fatalf("openworker %v did not finish within %v", args, d)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running openworker %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// Through the daemon, as an agent drives it: the file tools do not reach the first
// process's own memory, descriptors or error output (the daemon's log, which every session
// shares), and a shell-state file turned into a FIFO hangs neither the call nor the session.
func TestServeSessionFileToolsAndShellState(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	d := w.daemonWithLog()
	id, errs, code := w.runWithin(30*time.Second, "", "session", "start", "--rw", w.project, "--network", "none", "--provider", "linux")
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}

	const forged = "openworker: forged line from a session"
	for _, path := range []string{"/proc/self/fd/2", "/proc/1/fd/2"} {
		if _, errs, code := w.runWithin(30*time.Second, forged+"\n", "session", "write", id, path); code == 0 {
			t.Errorf("session write %s succeeded: %s", path, errs)
		}
	}
	for _, args := range [][]string{{"read", id, "/proc/self/mem"}, {"read", id, "/proc/self/environ"}, {"list", id, "/proc/self/fd"}} {
		if out, _, code := w.runWithin(30*time.Second, "", append([]string{"session"}, args...)...); code == 0 {
			t.Errorf("session %v succeeded: %.200q", args, out)
		}
	}

	trap := `trap 'rm -f "$__openworker_state"; mkfifo "$__openworker_state"' EXIT`
	_, errs, code = w.runWithin(30*time.Second, "", "session", "exec", id, trap)
	if code != 0 || !strings.Contains(errs, "shell state not taken") {
		t.Errorf("a command that leaves a FIFO for the shell state: %d %s", code, errs)
	}
	if out, errs, code := w.runWithin(30*time.Second, "", "session", "exec", id, "echo next"); code != 0 || out != "next\n" {
		t.Errorf("the command after it: %d %q %s", code, out, errs)
	}

	d.stop(t)
	for _, line := range d.log() {
		if strings.Contains(line, "forged line") {
			t.Errorf("a session's write reached the daemon's log: %q", line)
		}
	}
}

// A call that never ends holds up neither `session ls`, nor `session end`, nor the
// daemon's own stop.
func TestServeSessionEndDuringACall(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	d := w.daemonWithLog()
	id, errs, code := w.runWithin(30*time.Second, "", "session", "start", "--rw", w.project, "--network", "none", "--provider", "linux")
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	stuck := exec.Command(binary, "session", "exec", id, "touch stuck && exec sleep 600")
	stuck.Env, stuck.Dir = w.env, w.project
	if err := stuck.Start(); err != nil {
		t.Fatal(err)
	}
	stuckDone := make(chan error, 1)
	go func() { stuckDone <- stuck.Wait() }()
	defer stuck.Process.Kill()
	tstest.WaitFor(t, 30*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(w.project, "stuck")); err != nil {
			return fmt.Errorf("the long command never started: %v", err)
		}
		return nil
	})
	if out, errs, code := w.runWithin(15*time.Second, "", "session", "ls"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "linux") {
		t.Errorf("session ls during a long call: %d %q %s", code, out, errs)
	}
	if _, errs, code := w.runWithin(15*time.Second, "", "session", "end", id); code != 0 {
		t.Errorf("session end during a long call: %d %s", code, errs)
	}
	select {
	case err := <-stuckDone:
		if err == nil {
			t.Error("the call cut short by session end reported success")
		}
	case <-time.After(15 * time.Second):
		t.Error("the call in progress did not return after session end")
	}

	d.stop(t)
}

// stop sends the daemon SIGTERM, as a service manager does, and waits for it to exit.
func (d *daemonLog) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.ended:
		d.cmd.Wait()
	case <-time.After(15 * time.Second):
		t.Error("the daemon did not stop within 15 s of SIGTERM")
	}
}
