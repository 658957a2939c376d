package session

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// within fails the test when f has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// A tool call that never ends (a command that runs for ever, a runner stuck in a system
// call) holds the session's one-call-at-a-time lock. Listing the session and ending it
// never wait for it: End kills the sandbox, and the call returns with an error.
func TestEndDoesNotWaitForAStuckCall(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(f.project, "stuck.pid")
	t.Cleanup(func() {
		// A direct session's commands are the test's own processes: the stuck one goes.
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	callErr := make(chan error, 1)
	go func() {
		_, err := s.Exec(runner.ExecArgs{Command: "echo $$ > stuck.pid.tmp && mv stuck.pid.tmp stuck.pid && exec sleep 600"}, nil)
		callErr <- err
	}()
	tstest.WaitFor(t, 20*time.Second, func() error {
		if _, err := os.Stat(pidFile); err != nil {
			return fmt.Errorf("the command never started: %v", err)
		}
		return nil
	})
	within(t, 5*time.Second, "Active and Folders during a call", func() {
		s.Active()
		s.Folders()
	})
	within(t, 10*time.Second, "End during a call", s.End)
	select {
	case err := <-callErr:
		if err == nil {
			t.Error("the call cut short by End returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in progress did not return after End")
	}
	if _, ok := f.m.Get(s.ID); ok {
		t.Error("the ended session is still listed")
	}
}

// Each session's runner has an error stream of its own: what reaches the daemon's error
// output from it is marked with the session and cannot pass for a line of the daemon's or
// of another session's, however it is written.
func TestRunnerErrorsAreMarkedWithTheSession(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lines := make(chan []string, 1)
	go func() {
		var got []string
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		lines <- got
	}()
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	f.m.opts.RunnerStderr = w
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	// The runner is the wrapper shell's parent; a command writes to its error output.
	forged := `printf 'openworker: serving the local API\n\033[2Kopenworker session 000000000000: forged\n%0200000d\n' 0 > /proc/$PPID/fd/2`
	if res, err := s.Exec(runner.ExecArgs{Command: forged}, nil); err != nil || res.ExitCode != 0 {
		t.Fatalf("writing to the runner's error output: %v %+v", err, res)
	}
	within(t, 10*time.Second, "End", s.End)
	w.Close()
	prefix := "openworker session " + s.ID + " runner: "
	var total int
	var got []string
	select {
	case got = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon's error output stayed open after the session ended")
	}
	for _, line := range got {
		total += len(line) + 1
		if !strings.HasPrefix(line, prefix) {
			t.Errorf("a line of the runner's error output is not marked with its session: %.120q", line)
		}
		if strings.ContainsAny(line, "\x1b\r") {
			t.Errorf("a control character reached the daemon's error output: %.120q", line)
		}
	}
	if total == 0 {
		t.Error("nothing of the runner's error output reached the daemon's")
	}
	if total > 64<<10 {
		t.Errorf("%d bytes of one runner's error output reached the daemon's", total)
	}
}

// Two ends at once (a signal's and the deferred one of the code that started the session):
// neither returns before the session has ended, so a process that exits after either
// leaves no private tmp and no record behind.
func TestEndReturnsOnlyOnceEnded(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	for i := range 5 {
		s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
		if err != nil {
			t.Fatal(err)
		}
		record := filepath.Join(f.home, "state", "sessions", s.ID+".json")
		left := make(chan []string, 2)
		for range 2 {
			go func() {
				s.EndBecause("twice")
				var l []string
				if _, err := os.Stat(record); err == nil {
					l = append(l, "record")
				}
				if _, err := os.Stat(s.tmp); err == nil {
					l = append(l, "private tmp")
				}
				if _, ok := f.m.Get(s.ID); ok {
					l = append(l, "listed")
				}
				left <- l
			}()
		}
		for range 2 {
			if l := <-left; len(l) > 0 {
				t.Fatalf("round %d: an End returned while the session still had %v", i, l)
			}
		}
	}
}

// Ending a session on a wall without a process namespace (a Mac's, or none) ends what its
// commands left running, in order: the runner's connection is closed, the runner sends
// SIGTERM to its commands' process groups and gives their traps a second, and what is left is
// killed after. Killing the runner first left `server &` running for good.
func TestEndStopsWhatCommandsLeftRunning(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	pidFile, termed := filepath.Join(f.project, "server.pid"), filepath.Join(f.project, "termed")
	var pid int
	t.Cleanup(func() {
		if pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	res, err := s.Exec(runner.ExecArgs{Command: `sh -c 'trap "echo termed > termed; exit 0" TERM; echo $$ > server.pid.tmp; mv server.pid.tmp server.pid; while :; do sleep 0.1; done' >/dev/null 2>&1 &`}, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("starting the server: %v %+v", err, res)
	}
	tstest.WaitFor(t, 10*time.Second, func() error {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	within(t, 10*time.Second, "End", s.End)
	if b, err := os.ReadFile(termed); err != nil || string(b) != "termed\n" {
		t.Errorf("the server's SIGTERM trap did not run before the session ended: %q %v", b, err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return fmt.Errorf("the command's server %d outlived the session", pid)
		}
		return nil
	})
}
