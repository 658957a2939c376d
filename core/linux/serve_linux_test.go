package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// startServed starts a wall whose first process serves the runner, and returns the core's
// client for it.
func startServed(t *testing.T, pv *Provider, w *world, p *policy.Policy) (*runner.Client, sandbox.Process) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	core, theirs := os.NewFile(uintptr(fds[0]), "core"), os.NewFile(uintptr(fds[1]), "runner")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	proc, err := pv.Start(ctx, p, sandbox.RunnerSpec{
		Path: "/nonexistent/openworker", Env: w.env(p), Dir: w.project, Conn: theirs, Serve: true,
	})
	theirs.Close()
	if err != nil {
		core.Close()
		t.Fatalf("start the sandbox: %v", err)
	}
	c := runner.NewClient(core)
	t.Cleanup(func() {
		c.Close()
		proc.Kill()
		proc.Wait()
	})
	return c, proc
}

func execIn(t *testing.T, c *runner.Client, cmd string) *runner.Result {
	t.Helper()
	r, err := c.Call(&runner.Request{Tool: runner.ToolExec, Exec: &runner.ExecArgs{Command: cmd, Timeout: 10 * time.Second}}, nil)
	if err != nil {
		t.Fatalf("exec %q: %v", cmd, err)
	}
	if strings.Contains(string(r.Stdout)+string(r.Stderr), secret) {
		t.Fatalf("the secret leaked into the output of %q", cmd)
	}
	return r
}

// The wall's first process serves tool calls from the thread the wall was built on: file
// tools and commands meet Landlock as well as the mounts, and the runner's binary is not
// there to be read (it was never mounted).
func TestServedRunnerIsBehindTheWall(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	p.RunnerFiles = []string{"/nonexistent/openworker"}
	c, _ := startServed(t, &Provider{}, w, p)

	// /dev/random is bound writable by its mode and its mount, and Landlock grants only
	// reading it: opening it for writing is refused. A call served on a thread outside
	// Landlock would open it (and then refuse to write a file that is not a regular one).
	_, err := c.Call(&runner.Request{Tool: runner.ToolWrite, Write: &runner.WriteArgs{Path: "/dev/random", Content: []byte("x")}}, nil)
	var te *runner.ToolError
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "permission denied") {
		t.Errorf("write /dev/random = %v, want permission denied by Landlock", err)
	}
	if r := execIn(t, c, "echo x > /dev/random"); r.ExitCode == 0 {
		t.Errorf("a command wrote /dev/random; Landlock must refuse it")
	}
	for _, path := range []string{filepath.Join(w.home, ".ssh", "id_ed25519"), filepath.Join(w.home, "notshared.txt")} {
		if _, err := c.Call(&runner.Request{Tool: runner.ToolRead, Read: &runner.ReadArgs{Path: path}}, nil); err == nil {
			t.Errorf("read %s succeeded", path)
		}
	}
	if _, err := c.Call(&runner.Request{Tool: runner.ToolWrite, Write: &runner.WriteArgs{Path: filepath.Join(w.readonly, "x"), Content: []byte("x")}}, nil); err == nil {
		t.Error("write into the read-only folder succeeded")
	}
	if _, err := c.Call(&runner.Request{Tool: runner.ToolWrite, Write: &runner.WriteArgs{Path: "made/inside.txt", Content: []byte("hello")}}, nil); err != nil {
		t.Fatalf("write a relative path in the project: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(w.project, "made", "inside.txt")); err != nil || string(b) != "hello" {
		t.Errorf("the file written inside reads %q, %v on the host", b, err)
	}

	// Shell state and exit codes, as from the runner started as a program of its own.
	execIn(t, c, "cd made && export GREETING=hi")
	if r := execIn(t, c, `echo "$GREETING $(pwd)"; exit 7`); r.ExitCode != 7 || string(r.Stdout) != "hi "+filepath.Join(w.project, "made")+"\n" {
		t.Errorf("got %q exit %d, want the exported variable, the folder cd'd into, and exit 7", r.Stdout, r.ExitCode)
	}
	// Commands have no capabilities and cannot gain any.
	if r := execIn(t, c, "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status"); !strings.Contains(string(r.Stdout), "CapEff:\t0000000000000000") ||
		!strings.Contains(string(r.Stdout), "NoNewPrivs:\t1") {
		t.Errorf("a command's status:\n%s", r.Stdout)
	}
	if _, err := os.Stat(p.RunnerFiles[0]); err == nil {
		t.Fatal("the test's runner path exists on this machine")
	}
}

// An exec's result says whether anything else still runs in the sandbox once the command
// has ended: `openworker run` waits for the sandbox to be taken down only when something does.
func TestServedRunnerSaysWhenTheSandboxIsIdle(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	c, _ := startServed(t, &Provider{}, w, p)
	if r := execIn(t, c, "true"); !r.Idle {
		t.Error("nothing else runs, yet the result does not say idle")
	}
	if r := execIn(t, c, "sleep 30 >/dev/null 2>&1 & echo $! > bg.pid"); r.Idle {
		t.Error("a background sleep runs, yet the result says idle")
	}
	if r := execIn(t, c, "true"); r.Idle {
		t.Error("the background sleep still runs, yet the next result says idle")
	}

	execIn(t, c, "kill $(cat bg.pid)")
	tstest.WaitFor(t, 5*time.Second, func() error {
		if !execIn(t, c, "true").Idle {
			return errors.New("the killed sleep ended, yet no result says idle")
		}
		return nil
	})
	// A process whose name reads like a zombie's state in /proc/PID/stat fools nothing.
	if r := execIn(t, c, `cp /bin/sleep "$P/x) Z" && { "$P/x) Z" 30 >/dev/null 2>&1 & } && sleep 0.1 && grep -l "x) Z" /proc/[0-9]*/stat`); r.ExitCode != 0 || r.Idle {
		t.Errorf("a process named \"x) Z\" runs (exit %d: %s%s), yet the result says idle: %v", r.ExitCode, r.Stdout, r.Stderr, r.Idle)
	}
}

// No thread of the sandbox's first process keeps a capability once the wall stands: the
// threads other than the walled one never start a program, but without a user namespace of
// its own they would hold the host's capabilities, seen here from the host.
func TestServedRunnerHoldsNoCapabilities(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	c, proc := startServed(t, &Provider{}, w, p)
	execIn(t, c, "true") // the wall stands and the runner serves
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", proc.Pid()))
	must(t, err)
	if len(tasks) < 2 {
		t.Fatalf("the first process has %d thread(s); the test needs the runtime's others", len(tasks))
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", proc.Pid(), task.Name()))
		must(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			name, value, _ := strings.Cut(line, ":\t")
			switch name {
			case "CapInh", "CapPrm", "CapEff", "CapAmb":
				if value != "0000000000000000" {
					t.Errorf("thread %s of PID 1 holds %s %s", task.Name(), name, value)
				}
			}
		}
	}
}

// The first process is also init: orphans are reaped as they exit, while every command's own
// exit status still reaches its result, however its orphans race it.
func TestServedRunnerReapsOrphans(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	c, proc := startServed(t, &Provider{}, w, p)
	for i := range 20 {
		// The subshell's sleep is orphaned when the subshell exits, and exits as the
		// command does or just after.
		r := execIn(t, c, fmt.Sprintf("(sleep 0.0%d &); exit %d", i%3, i%5+1))
		if r.ExitCode != i%5+1 {
			t.Fatalf("call %d: exit %d, want %d", i, r.ExitCode, i%5+1)
		}
	}
	// Every orphan exits within a tenth of a second; init must then have no child left,
	// a zombie least of all.
	children := fmt.Sprintf("/proc/%d/task/%d/children", proc.Pid(), proc.Pid())
	tstest.WaitFor(t, 10*time.Second, func() error {
		kids, err := os.ReadFile(children)
		must(t, err)
		var left []error
		for _, pid := range strings.Fields(string(kids)) {
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			left = append(left, fmt.Errorf("init still has a child: %s", stat))
		}
		return errors.Join(left...)
	})
}

// A prepared builder is the one Start uses when the network mode matches; one of the wrong
// mode is ended, and the session gets a fresh builder.
func TestPrepare(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)

	pv := &Provider{}
	pv.Prepare(policy.None)
	if pv.spare == nil {
		t.Fatal("Prepare left no builder ready")
	}
	<-pv.spare.ready
	prepared := pv.spare.b.proc.Pid()
	c, proc := startServed(t, pv, w, p)
	if proc.Pid() != prepared {
		t.Errorf("Start used PID %d, not the prepared builder %d", proc.Pid(), prepared)
	}
	if pv.spare != nil {
		t.Error("the prepared builder is still offered after Start took it")
	}
	if r := execIn(t, c, "echo ok"); string(r.Stdout) != "ok\n" {
		t.Errorf("the prepared sandbox answered %q", r.Stdout)
	}

	if relayWanted(policy.Open) {
		// Open mode has a network of its own too: its builder serves any mode.
		return
	}
	pv.Prepare(policy.Open)
	if pv.spare == nil {
		t.Fatal("Prepare left no builder ready")
	}
	<-pv.spare.ready
	wrong := pv.spare.b.proc.Pid()
	_, proc = startServed(t, pv, w, p)
	if proc.Pid() == wrong {
		t.Fatal("Start used a builder prepared for the host's network in a session without network")
	}
	if err := syscall.Kill(wrong, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the builder prepared for the wrong mode is still there (kill 0: %v)", err)
	}
}
