package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/runner"
)

// A command beside the shell runs while the shell's command runs and while others beside it
// do; each is signalled by its tag; the shell's state is untouched; and ending the session
// ends what still runs beside it, whose call returns with the reason.
func TestExecApartRunsBesideTheShell(t *testing.T) {
	f, s := startDirect(t)
	up, released := filepath.Join(f.project, "up"), filepath.Join(f.project, "released")
	shellDone := make(chan *Result, 1)
	go func() {
		r, err := s.Exec(runner.ExecArgs{Command: "while [ ! -e " + released + " ]; do sleep 0.02; done; echo shell-done"}, nil)
		if err != nil {
			t.Error(err)
		}
		shellDone <- r
	}()
	// A server in the background, as an agent host starts one.
	serverDone := make(chan error, 1)
	go func() {
		_, err := s.ExecApart(context.Background(), runner.ExecArgs{Command: "touch " + up + "; exec sleep 600", Dir: f.project}, "server", nil, nil)
		serverDone <- err
	}()
	waitForFile(t, up)
	if _, err := s.ExecApart(context.Background(), runner.ExecArgs{Command: "true", Dir: f.project}, "server", nil, nil); !errors.Is(err, ErrTagInUse) {
		t.Fatalf("a second call with a running call's tag: %v", err)
	}
	var chunks strings.Builder
	r, err := s.ExecApart(context.Background(), runner.ExecArgs{Command: "cd /; pwd; touch " + released, Dir: f.project}, "", nil, func(_ string, b []byte) { chunks.Write(b) })
	if err != nil || r.ExitCode != 0 || string(r.Stdout) != "/\n" || chunks.String() != "/\n" {
		t.Fatalf("apart: %+v %v (streamed %q)", r, err, chunks.String())
	}
	select {
	case r := <-shellDone:
		if string(r.Stdout) != "shell-done\n" {
			t.Fatalf("the shell's command: %q", r.Stdout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shell's command did not end")
	}
	if r, err := s.Exec(runner.ExecArgs{Command: "pwd"}, nil); err != nil || strings.TrimSpace(string(r.Stdout)) != f.project {
		t.Fatalf("the shell's folder after a cd beside it: %+v %v", r, err)
	}
	// A signal by tag: ignored SIGINT and SIGTERM escalate to the group's SIGKILL, and the
	// session goes on.
	trapped := filepath.Join(f.project, "trapped")
	stubborn := make(chan *Result, 1)
	go func() {
		r, err := s.ExecApart(context.Background(), runner.ExecArgs{Command: "trap '' INT TERM; touch " + trapped + "; while :; do sleep 0.05; done", Dir: f.project}, "stubborn", nil, nil)
		if err != nil {
			t.Error(err)
		}
		stubborn <- r
	}()
	waitForFile(t, trapped)
	if !s.SignalApart("stubborn", syscall.SIGINT) || s.SignalApart("nobody", syscall.SIGINT) {
		t.Fatal("SignalApart found the wrong calls")
	}
	select {
	case r := <-stubborn:
		if r == nil || r.Interrupted != "SIGINT" || r.ExitCode != 128+int(syscall.SIGKILL) {
			t.Fatalf("the stubborn command: %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a command beside the shell that ignores signals was never ended")
	}
	s.EndBecause("its agent host exited")
	select {
	case err := <-serverDone:
		if err == nil || !strings.Contains(err.Error(), "its agent host exited") {
			t.Fatalf("the server's call after the end: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server beside the shell outlived the session")
	}
	if _, err := s.ExecApart(context.Background(), runner.ExecArgs{Command: "true"}, "", nil, nil); err == nil {
		t.Fatal("a call beside the shell of an ended session ran")
	}
	if _, err := os.Stat(f.project); err != nil {
		t.Fatal(err)
	}
}

// A call beside the shell whose caller goes away (an agent host killed its shell before the
// shell passed the host's SIGTERM on) gets SIGTERM, as a program whose parent stops it does,
// then SIGKILL: a command's TERM trap runs.
func TestExecApartCallerGoneIsTerminated(t *testing.T) {
	f, s := startDirect(t)
	running, stopped := filepath.Join(f.project, "running"), filepath.Join(f.project, "stopped")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Result, 1)
	go func() {
		r, err := s.ExecApart(ctx, runner.ExecArgs{Command: "trap 'echo stopped > " + stopped + "; exit 3' TERM; touch " + running + "; while :; do sleep 0.05; done", Dir: f.project}, "", nil, nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitForFile(t, running)
	cancel()
	select {
	case r := <-done:
		if r == nil || r.Interrupted != "SIGTERM" || r.ExitCode != 3 {
			t.Fatalf("the command whose caller went away: %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the command whose caller went away was never ended")
	}
	if b, err := os.ReadFile(stopped); err != nil || string(b) != "stopped\n" {
		t.Fatalf("the command's TERM trap: %q %v", b, err)
	}
}

// A host that stops a command with SIGTERM (which its shell passes on) and then kills its
// shell at once: the caller's going away does not cut the command's TERM trap short; the
// stop goes on with its grace, then SIGKILL.
func TestExecApartSignalThenCallerGoneKeepsTheGrace(t *testing.T) {
	f, s := startDirect(t)
	running, stopped := filepath.Join(f.project, "running"), filepath.Join(f.project, "stopped")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *Result, 1)
	go func() {
		r, err := s.ExecApart(ctx, runner.ExecArgs{Command: "trap 'sleep 0.5; echo stopped > " + stopped + "; exit 3' TERM; touch " + running + "; while :; do sleep 0.05; done", Dir: f.project}, "slow-trap", nil, nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitForFile(t, running)
	if !s.SignalApart("slow-trap", syscall.SIGTERM) {
		t.Fatal("no call with the tag")
	}
	time.Sleep(50 * time.Millisecond)
	cancel() // the host kills its shell
	select {
	case r := <-done:
		if r == nil || r.Interrupted != "SIGTERM" || r.ExitCode != 3 {
			t.Fatalf("the command: %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the command was never ended")
	}
	if b, err := os.ReadFile(stopped); err != nil || string(b) != "stopped\n" {
		t.Fatalf("the command's TERM trap was cut short: %q %v", b, err)
	}
}
