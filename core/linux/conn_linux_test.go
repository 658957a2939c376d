package linux

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// The runner's end of the core's socketpair is its fd 3, and it holds nothing else.
func TestRunnerConnIsFD3(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.Allowlist, 18080)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	core, runnerEnd := os.NewFile(uintptr(fds[0]), "core"), os.NewFile(uintptr(fds[1]), "runner")
	defer core.Close()
	proc, err := (&Provider{}).Start(context.Background(), p, sandbox.RunnerSpec{
		Path: "/bin/sh",
		Args: []string{"-c", `echo hello >&3; exec sleep 30`},
		Conn: runnerEnd,
	})
	runnerEnd.Close()
	must(t, err)
	defer proc.Wait()
	defer proc.Kill()
	core.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(core)
	if line, _ := r.ReadString('\n'); line != "hello\n" {
		t.Fatalf("read %q from the runner, want hello", line)
	}
	// While the runner waits, look at its descriptors from the host: the setup socket and
	// the proxy listener must never reach it.
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", proc.Pid(), proc.Pid()))
	must(t, err)
	runner := strings.Fields(string(kids))
	if len(runner) != 1 {
		t.Fatalf("PID 1 has children %v, want the runner alone", runner)
	}
	// The dynamic loader of sleep opens its libraries after the exec, for a moment at fd 4,
	// so look until the descriptors settle: what the runner was handed stays for good.
	const want = "0=/dev/null 1=/dev/null 2=/dev/null 3=socket"
	var got string
	tstest.WaitFor(t, 5*time.Second, func() error {
		if b, _ := os.ReadFile("/proc/" + runner[0] + "/cmdline"); strings.HasPrefix(string(b), "sleep\x00") {
			if got = descriptors(t, runner[0]); got == want {
				return nil
			}
		}
		return fmt.Errorf("the runner's descriptors are %q, want %q", got, want)
	})
}

// descriptors lists a process's open descriptors as "fd=kind", kind being a path or the
// type of an anonymous file ("socket", "pipe").
func descriptors(t *testing.T, pid string) string {
	entries, err := os.ReadDir("/proc/" + pid + "/fd")
	must(t, err)
	var got []string
	for _, e := range entries {
		target, _ := os.Readlink("/proc/" + pid + "/fd/" + e.Name())
		got = append(got, e.Name()+"="+strings.SplitN(target, ":", 2)[0])
	}
	return strings.Join(got, " ")
}
