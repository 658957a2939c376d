package linux

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// v1Here is a sandbox cgroup made now on this machine's v1 hierarchies, removed when the
// test ends; the test is skipped where there are none.
func v1Here(t *testing.T) *cgroup {
	t.Helper()
	cg, err := newCgroup(hostCgroups())
	must(t, err)
	t.Cleanup(cg.remove)
	if len(cg.v1Dirs) == 0 {
		t.Skip("no cgroup v1 hierarchy lets this process make a cgroup here")
	}
	return cg
}

// TestBuilderBornInItsV1Cgroups: a builder started for v1 cgroups is in every one of them
// from its birth, with no move of its PID afterwards, and the launch thread, like every
// other thread of this process, is back in this process's own cgroups.
func TestBuilderBornInItsV1Cgroups(t *testing.T) {
	cg := v1Here(t)
	cmd := osexec.Command("/bin/sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	_, born, err := startBuilder(cmd, cg.v1Dirs)
	must(t, err)
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if !born {
		t.Fatal("root on a machine with v1 hierarchies: want the builder born in its cgroups")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
	must(t, err)
	for _, dir := range cg.v1Dirs {
		if !strings.Contains(string(b), ":"+strings.TrimPrefix(dir, mountOf(t, dir))+"\n") {
			t.Errorf("the builder is not in %s:\n%s", dir, b)
		}
	}
	tids, err := threadIDs("self")
	must(t, err)
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/cgroup")
		if err != nil {
			continue // the thread ended
		}
		if strings.Contains(string(b), cgroupPrefix) {
			t.Errorf("thread %d of this process is still in a sandbox's cgroup:\n%s", tid, b)
		}
	}
}

// mountOf is the mount point of the v1 hierarchy dir lies in.
func mountOf(t *testing.T, dir string) string {
	t.Helper()
	for _, h := range hostCgroups().v1 {
		if strings.HasPrefix(dir, h.mount+"/") {
			return h.mount
		}
	}
	t.Fatalf("%s is in no v1 hierarchy of this process", dir)
	return ""
}

// TestLaunchThreadRetired: a launch thread that cannot move back to its own cgroup starts
// no more builders (they would be born in the wrong cgroup); the next launch gets a new
// thread. The cgroups here are folders standing for them: the move in takes, the move back
// (into a "tasks" that is a folder) does not.
func TestLaunchThreadRetired(t *testing.T) {
	base := t.TempDir()
	must(t, os.Mkdir(filepath.Join(base, "tasks"), 0o755))
	into := filepath.Join(base, cgroupPrefix+"test")
	must(t, os.Mkdir(into, 0o755))
	before := builderLauncher.get()
	cmd := osexec.Command("/bin/true")
	_, born, err := startBuilder(cmd, []string{into})
	must(t, err)
	must(t, cmd.Wait())
	if !born {
		t.Error("the move in took: want the builder reported born inside")
	}
	if after := builderLauncher.get(); after == before {
		t.Error("the thread that could not move back still serves launches")
	}
	// The next launch, on a new thread, works.
	cmd = osexec.Command("/bin/true")
	_, born, err = startBuilder(cmd, nil)
	must(t, err)
	must(t, cmd.Wait())
	if born {
		t.Error("no cgroups asked for: want born false")
	}
}

// TestLaunchFallsBackToProcs: where the launch thread cannot enter a cgroup, it enters none,
// says so, and the caller moves the builder (cgroup.procs) instead.
func TestLaunchFallsBackToProcs(t *testing.T) {
	base := t.TempDir()
	ok := filepath.Join(base, "a")
	must(t, os.Mkdir(ok, 0o755))
	refusing := filepath.Join(base, "b")
	must(t, os.MkdirAll(filepath.Join(refusing, "tasks"), 0o755))
	before := builderLauncher.get()
	cmd := osexec.Command("/bin/true")
	_, born, err := startBuilder(cmd, []string{ok, refusing})
	must(t, err)
	must(t, cmd.Wait())
	if born {
		t.Error("the second cgroup refused the thread: want born false")
	}
	// It left the first one again (into base/tasks, a file here), and serves on.
	if b, err := os.ReadFile(filepath.Join(base, "tasks")); err != nil || strings.TrimSpace(string(b)) == "" {
		t.Errorf("the thread did not move back out of %s: %q %v", ok, b, err)
	}
	if builderLauncher.get() != before {
		t.Error("a thread that moved back was retired")
	}
}

// TestV1CgroupDelegatedToOrdinaryUser: an ordinary user whose own v1 cgroups are delegated to
// them (the folders and their files theirs) gets the limits, its builder born inside, and a
// fork bomb meets the process limit. Run as uid 65534 in such cgroups, made here.
func TestV1CgroupDelegatedToOrdinaryUser(t *testing.T) {
	if os.Getenv(underDelegated) != "" {
		checkDelegated(t)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to delegate cgroups")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	h := hostCgroups()
	var dirs []string
	for _, c := range []string{"pids", "memory"} {
		v1, ok := h.v1[c]
		if !ok {
			t.Skipf("no v1 %s hierarchy here", c)
		}
		dir := filepath.Join(v1.mount, v1.own, "openworker-delegated-test-"+strconv.Itoa(os.Getpid()))
		must(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() {
			// The run's processes have ended; what a sandbox left is swept with it.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.IsDir() {
					os.Remove(filepath.Join(dir, e.Name()))
				}
			}
			killAll(dir)
			tstest.Poll(5*time.Second, func() error { return os.Remove(dir) })
		})
		for _, f := range []string{"", "tasks", "cgroup.procs"} {
			must(t, os.Chown(filepath.Join(dir, f), 65534, 65534))
		}
		dirs = append(dirs, dir)
	}
	bin := tstest.NobodysCopy(t)
	// The run is moved into the cgroups by a shell before it runs the tests, as a login
	// manager would start a delegated user's session.
	var moves []string
	for _, d := range dirs {
		moves = append(moves, "echo $$ > "+d+"/cgroup.procs")
	}
	cmd := osexec.Command("/bin/sh", "-c", strings.Join(moves, " && ")+` && exec "$0" -test.count=1 -test.v -test.run '^TestV1CgroupDelegatedToOrdinaryUser$'`, bin)
	cmd.Dir = "/"
	cmd.Env = tstest.NobodysEnv(underDelegated+"=1", underUnprivileged+"=1")
	// Root moves the shell in; the shell is nobody's by then only for the tests: the move
	// needs write access to the cgroup's files, which it has.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tstest.Nobody, Gid: tstest.Nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestV1CgroupDelegatedToOrdinaryUser") {
		t.Fatalf("as uid 65534 in delegated v1 cgroups: %v\n%s", err, out)
	}
}

// underDelegated marks the copy of this test binary that runs as an ordinary user in v1
// cgroups delegated to it.
const underDelegated = "OPENWORKER_LINUX_TEST_DELEGATED"

func checkDelegated(t *testing.T) {
	cg := v1Here(t)
	cmd := osexec.Command("/bin/true")
	_, born, err := startBuilder(cmd, cg.v1Dirs)
	must(t, err)
	must(t, cmd.Wait())
	if !born {
		t.Error("an ordinary user with delegated v1 cgroups: want the builder born in its cgroups")
	}
	// The limit holds for a sandbox, the user's own processes' cgroup untouched.
	w := newWorld(t)
	const limit = 60
	s := startLimited(t, &Provider{}, w, sandbox.Limits{Processes: limit}, `
sh -c 'i=0; while [ $i -lt 200 ]; do sleep 600 & i=$((i+1)); done' 2>/dev/null &
exec sleep 600`)
	proc := s.proc.(*process)
	dir := proc.cg.serving["pids"]
	if dir == "" {
		t.Fatalf("no pids limit in force for a delegated user: %q", s.proc.Active())
	}
	if err := tstest.Poll(15*time.Second, func() error {
		if n := readNumber(t, filepath.Join(dir, "pids.current")); n < limit-5 {
			return os.ErrNotExist
		}
		return nil
	}); err != nil {
		t.Errorf("the sandbox never reached its process limit of %d", limit)
	}
	if n := readNumber(t, filepath.Join(dir, "pids.current")); n > limit {
		t.Errorf("the sandbox holds %d tasks, over its limit of %d", n, limit)
	}
	must(t, s.proc.Kill())
	s.wait(t)
	if exists(dir) {
		t.Errorf("the sandbox's cgroup %s is left behind", dir)
	}
}
