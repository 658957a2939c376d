//go:build darwin || linux

package seatbelt

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// fakeSandboxExec stands in for sandbox-exec where there is none: it skips -p/-f/-D and their
// values, as sandbox-exec does after applying the profile, and executes the command.
const fakeSandboxExec = `#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in -p|-f|-D) shift 2 ;; *) break ;; esac
done
exec "$@"
`

func writeFake(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "sandbox-exec")
	if err := os.WriteFile(exe, []byte(fakeSandboxExec), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func socketPair(t *testing.T) (parent, child *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return os.NewFile(uintptr(fds[0]), "core"), os.NewFile(uintptr(fds[1]), "runner")
}

func TestLaunchPassesOnlyTheConnection(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to list a child's descriptors")
	}
	// A descriptor this process holds without close-on-exec, as if inherited from whoever
	// started OpenWorker.
	leak := filepath.Join(t.TempDir(), "inherited-secret")
	if err := os.WriteFile(leak, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	leakFD, err := syscall.Open(leak, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leakFD)
	core, runner := socketPair(t)
	defer core.Close()
	pr, _ := render(t, macPolicy())
	args := append(pr.Args(), "/bin/sh", "-c", `for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink $f)"; done >&3; echo pgid $(ps -o pgid= -p $$) >&3; echo sid $(ps -o sid= -p $$) >&3`)
	p, err := launch(writeFake(t), args, sandbox.RunnerSpec{Conn: runner}, nil)
	runner.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	var fds []string
	pgid, sid := "", ""
	sc := bufio.NewScanner(core)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "pgid "); ok {
			pgid = strings.TrimSpace(v)
			continue
		}
		if v, ok := strings.CutPrefix(sc.Text(), "sid "); ok {
			sid = strings.TrimSpace(v)
			continue
		}
		fds = append(fds, sc.Text())
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	hasConn := false
	for _, fd := range fds {
		num, target, _ := strings.Cut(fd, " ")
		if target == leak {
			t.Errorf("the runner inherited descriptor %s of %s (all: %v)", num, leak, fds)
		}
		if num == "3" && strings.HasPrefix(target, "socket:") {
			hasConn = true
		}
	}
	if !hasConn {
		t.Errorf("the runner's fd 3 is not the connection: %v", fds)
	}
	if pgid != strconv.Itoa(p.Pid()) {
		t.Errorf("the runner's process group is %q, want its own (%d)", pgid, p.Pid())
	}
	// A session of its own has no controlling terminal: /dev/tty opens nothing, whatever
	// terminal OpenWorker was started from.
	if sid != strconv.Itoa(p.Pid()) {
		t.Errorf("the runner's session is %q, want its own (%d), without a controlling terminal", sid, p.Pid())
	}
}

func TestKillEndsTheGroup(t *testing.T) {
	core, runner := socketPair(t)
	defer core.Close()
	// The runner starts a grandchild that outlives it in the same group, reports its PID,
	// then exits.
	args := []string{"-p", "(version 1)", "/bin/sh", "-c", `sleep 60 & echo $! >&3; exit 0`}
	p, err := launch(writeFake(t), args, sandbox.RunnerSpec{Conn: runner}, nil)
	runner.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(core).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	p.Wait()
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("the grandchild %d is already gone (%v); the test proves nothing", child, err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		// Killed and reparented, it is reaped by init; until then it is a zombie or gone.
		err := syscall.Kill(child, 0)
		if errors.Is(err, syscall.ESRCH) || isZombie(child) {
			return nil
		}
		return fmt.Errorf("grandchild %d survived Kill", child)
	})
}

// A process a command moved to a process group of its own is still in the runner's session:
// Kill finds it there (macOS has no process namespace to end it with the runner).
func TestKillEndsTheSession(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	core, runner := socketPair(t)
	defer core.Close()
	args := []string{"-p", "(version 1)", "/bin/sh", "-c", `perl -e 'setpgrp(0, 0); sleep 60' & echo $! >&3; sleep 60`}
	p, err := launch(writeFake(t), args, sandbox.RunnerSpec{Conn: runner}, nil)
	runner.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(core).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	tstest.WaitFor(t, 5*time.Second, func() error {
		if pgid, err := syscall.Getpgid(child); err != nil || pgid != child {
			return fmt.Errorf("the grandchild %d is not yet in a group of its own (%d, %v)", child, pgid, err)
		}
		return nil
	})
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	tstest.WaitFor(t, 5*time.Second, func() error {
		err := syscall.Kill(child, 0)
		if errors.Is(err, syscall.ESRCH) || isZombie(child) {
			return nil
		}
		return fmt.Errorf("the grandchild %d in a group of its own survived Kill", child)
	})
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestLaunchRefusesWithoutConnection(t *testing.T) {
	if _, err := launch(writeFake(t), []string{"/bin/true"}, sandbox.RunnerSpec{}, nil); err == nil {
		t.Error("launch without a connection gave no error")
	}
}

func TestLaunchEmptyEnvironment(t *testing.T) {
	t.Setenv("OPENWORKER_TEST_SECRET", "s3cret")
	core, runner := socketPair(t)
	defer core.Close()
	p, err := launch(writeFake(t), []string{"/bin/sh", "-c", `echo "[$OPENWORKER_TEST_SECRET]" >&3`}, sandbox.RunnerSpec{Conn: runner}, nil)
	runner.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(core).ReadString('\n')
	p.Wait()
	if strings.TrimSpace(line) != "[]" {
		t.Errorf("a nil Env passed OpenWorker's environment: %q", line)
	}
}

// stopRunner plays a runner that, once the core closes its connection, sends SIGTERM to the
// groups its commands left running, waits for them as the runner's grace does, and exits:
// one command traps SIGTERM and writes $1 as it ends, the other ignores it. Each is in a
// process group of its own in the runner's session.
const stopRunner = `perl -e '$SIG{TERM} = sub { open(F, ">", $ARGV[0]); print F "termed\n"; close F; exit 0 }; setpgrp(0, 0); sleep 60' "$1" &
t=$!
perl -e '$SIG{TERM} = "IGNORE"; setpgrp(0, 0); sleep 60' &
i=$!
echo "$t $i" >&3
cat <&3 >/dev/null
perl -e 'kill "TERM", -$ARGV[0], -$ARGV[1]' $t $i
wait $t
exit 0`

// Ending a session on a Mac: the core closes the runner's connection, the runner stops its
// commands' groups (their traps run), and what ignored it is killed after, found in the
// runner's session. Killing at once, as before, gave no command its grace.
func TestStopGivesTheRunnerItsGraceThenKills(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	core, runner := socketPair(t)
	trapped := filepath.Join(t.TempDir(), "trapped")
	p, err := launch(writeFake(t), []string{"-p", "(version 1)", "/bin/sh", "-c", stopRunner, "sh", trapped}, sandbox.RunnerSpec{Conn: runner}, nil)
	runner.Close()
	if err != nil {
		core.Close()
		t.Fatal(err)
	}
	defer p.Kill()
	var trapper, ignorer int
	if _, err := fmt.Fscan(bufio.NewReader(core), &trapper, &ignorer); err != nil {
		t.Fatal(err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		for _, pid := range []int{trapper, ignorer} {
			if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
				return fmt.Errorf("command %d is not yet in a group of its own (%d, %v)", pid, pgid, err)
			}
		}
		return nil
	})
	core.Close()
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > sandbox.StopWait+time.Second {
		t.Errorf("Stop took %v", took)
	}
	if b, err := os.ReadFile(trapped); err != nil || string(b) != "termed\n" {
		t.Errorf("the command's SIGTERM trap did not run before it was killed: %q %v", b, err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if err := syscall.Kill(ignorer, 0); errors.Is(err, syscall.ESRCH) || isZombie(ignorer) {
			return nil
		}
		return fmt.Errorf("the command %d that ignored SIGTERM survived Stop", ignorer)
	})
}

// A runner that does not end when its connection closes is waited for sandbox.StopWait, no longer,
// and killed with everything in its session.
func TestStopKillsARunnerThatDoesNotEnd(t *testing.T) {
	core, runner := socketPair(t)
	defer core.Close()
	p, err := launch(writeFake(t), []string{"-p", "(version 1)", "/bin/sh", "-c", "sleep 60 & echo $! >&3; exec sleep 60"}, sandbox.RunnerSpec{Conn: runner}, nil)
	runner.Close()
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Fscan(bufio.NewReader(core), &child); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < sandbox.StopWait || took > sandbox.StopWait+2*time.Second {
		t.Errorf("Stop returned after %v, want about %v", took, sandbox.StopWait)
	}
	p.Wait()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if err := syscall.Kill(child, 0); errors.Is(err, syscall.ESRCH) || isZombie(child) {
			return nil
		}
		return fmt.Errorf("the runner's child %d survived Stop", child)
	})
}
