package linux

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

func TestParseCgroups(t *testing.T) {
	for _, tc := range []struct {
		name, self, mountinfo string
		want                  cgroupHost
	}{{
		name: "hybrid",
		self: "9:name=systemd:/\n8:pids:/\n4:memory:/jobs/a1\n2:cpuacct:/\n1:cpu:/\n0::/\n",
		mountinfo: "30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n" +
			"31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n" +
			"33 30 0:29 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n" +
			"34 30 0:30 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n" +
			"35 30 0:31 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu\n" +
			"36 30 0:32 / /sys/fs/cgroup/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd\n",
		want: cgroupHost{v2Mount: "/sys/fs/cgroup/unified", v2Own: "/", v1: map[string]v1Hierarchy{
			"memory": {"/sys/fs/cgroup/memory", "/jobs/a1"},
			"pids":   {"/sys/fs/cgroup/pids", "/"},
			"cpu":    {"/sys/fs/cgroup/cpu", "/"},
		}},
	}, {
		name:      "unified",
		self:      "0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n",
		mountinfo: "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
		want:      cgroupHost{v2Mount: "/sys/fs/cgroup", v2Own: "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope", v1: map[string]v1Hierarchy{}},
	}, {
		name: "v1_co_mounted_and_part_of_the_hierarchy",
		self: "3:cpu,cpuacct:/docker/c1\n2:pids:/docker/c1\n",
		mountinfo: "40 30 0:33 /docker/c1 /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n" +
			"41 30 0:34 /docker/c1 /sys/fs/cgroup/my\\040pids rw - cgroup cgroup rw,pids\n",
		want: cgroupHost{v1: map[string]v1Hierarchy{
			"cpu":  {"/sys/fs/cgroup/cpu,cpuacct", "/"},
			"pids": {"/sys/fs/cgroup/my pids", "/"},
		}},
	}, {
		name: "none",
		want: cgroupHost{v1: map[string]v1Hierarchy{}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCgroups(tc.self, tc.mountinfo)
			if got.v2Mount != tc.want.v2Mount || got.v2Own != tc.want.v2Own || len(got.v1) != len(tc.want.v1) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for c, h := range tc.want.v1 {
				if got.v1[c] != h {
					t.Errorf("%s: got %+v, want %+v", c, got.v1[c], h)
				}
			}
		})
	}
}

func TestV2Base(t *testing.T) {
	for _, tc := range []struct{ mount, own, want string }{
		{"/sys/fs/cgroup", "/", "/sys/fs/cgroup"},
		{"/sys/fs/cgroup", "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope", "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice"},
		{"", "/", ""},
	} {
		if got := (&cgroupHost{v2Mount: tc.mount, v2Own: tc.own}).v2Base(); got != tc.want {
			t.Errorf("v2Base(%q, %q) = %q, want %q", tc.mount, tc.own, got, tc.want)
		}
	}
}

// startLimited starts script behind a wall with limits, from pv, its output collected.
func startLimited(t *testing.T, pv *Provider, w *world, l sandbox.Limits, script string) *sandboxed {
	t.Helper()
	p := w.policy(t, policy.None, 0)
	return startFrom(t, pv, p, w.env(p), l, 20*time.Second, script)
}

// limitsHere says whether this machine lets this process limit a sandbox's processes and
// memory, and the cgroups of a sandbox started now would be: as newCgroup decides.
func limitsHere(t *testing.T) *cgroup {
	t.Helper()
	cg, err := newCgroup(hostCgroups())
	must(t, err)
	cg.remove()
	return cg
}

func needLimit(t *testing.T, controller string) {
	t.Helper()
	if cg := limitsHere(t); cg.serving[controller] == "" {
		t.Skipf("no %s limit on this machine: %s", controller, cg.missing[controller])
	}
}

// TestLimitsReported: every sandbox's Active list says which limits are in force and by
// which cgroup, or that they are not and why; as root the machine delegates them, as an
// ordinary user here it does not.
func TestLimitsReported(t *testing.T) {
	w := newWorld(t)
	s := startLimited(t, &Provider{}, w, sandbox.Limits{Processes: 300, CPUWeight: 50, Memory: sandbox.Amount{Bytes: 512 << 20}}, "true")
	s.wait(t)
	active := strings.Join(s.proc.Active(), "\n")
	cg := limitsHere(t)
	for c, what := range map[string]string{"pids": "processes 300", "memory": "memory 512MiB", "cpu": "cpu weight 50"} {
		switch {
		case cg.serving[c] != "":
			if !containsAny(active, what+" (cgroup v1)", what+" (cgroup v2)") || !strings.Contains(active, "limits: ") {
				t.Errorf("%s in force here, but the active list does not say so:\n%s", c, active)
			}
		case !strings.Contains(active, "limit not in force: "+what+": "+cg.missing[c]):
			t.Errorf("%s not in force here (%s), but the active list does not say so:\n%s", c, cg.missing[c], active)
		}
	}
	if os.Getuid() != 0 && !strings.Contains(active, "does not delegate") && len(limitsHere(t).serving) == 0 {
		t.Errorf("an ordinary user's sandbox without limits should say the machine does not delegate cgroups:\n%s", active)
	}
	if os.Getuid() == 0 && hostCgroups().v1["pids"].mount != "" && !strings.Contains(active, "processes 300 (cgroup v1)") {
		t.Errorf("root on a machine with a v1 pids hierarchy: want the v1 limit in force:\n%s", active)
	}
}

// TestSandboxInItsCgroup: every process inside, the first included, is in the sandbox's own
// cgroup in each hierarchy, v2 (cloned into it) and v1 (moved before it started anything).
func TestSandboxInItsCgroup(t *testing.T) {
	cg := limitsHere(t)
	if !cg.made() {
		t.Skip("no cgroup can be made here")
	}
	w := newWorld(t)
	s := startLimited(t, &Provider{}, w, sandbox.Limits{}, `cat /proc/1/cgroup; echo ---; sh -c 'cat /proc/self/cgroup'`)
	out, code := s.wait(t)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	first, child, _ := strings.Cut(out, "---")
	prefix := cgroupPrefix + strconv.Itoa(os.Getpid()) + "-"
	for _, part := range []string{first, child} {
		for _, line := range strings.Split(strings.TrimSpace(part), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 {
				t.Fatalf("odd cgroup line %q in:\n%s", line, out)
			}
			wanted := f[0] == "0" && f[1] == "" && cg.v2Dir != ""
			for _, c := range strings.Split(f[1], ",") {
				wanted = wanted || slices.Contains(cg.v1Dirs, cg.serving[c])
			}
			if wanted && !strings.Contains(filepath.Base(f[2]), prefix) {
				t.Errorf("a process inside is not in the sandbox's cgroup: %q\n%s", line, out)
			}
		}
	}
}

// cgroupDirs are the directories of a running sandbox's cgroups.
func cgroupDirs(proc sandbox.Process) []string { return proc.(*process).cg.dirs() }

func readNumber(t *testing.T, file string) int64 {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	must(t, err)
	return n
}

// TestForkBomb: a fork bomb inside meets the sandbox's process limit; the host and another
// sandbox keep starting processes meanwhile, and the cgroup is gone once the sandbox ends.
func TestForkBomb(t *testing.T) {
	needLimit(t, "pids")
	w := newWorld(t)
	const limit = 200
	// The shell that starts the bomb becomes sleep: a shell whose fork fails gives up.
	bomb := startLimited(t, &Provider{}, w, sandbox.Limits{Processes: limit}, `
sh -c 'b() { b | b & }; b' 2>/dev/null &
exec sleep 600`)
	dir := bomb.proc.(*process).cg.serving["pids"]
	// The bomb is at its limit once the cgroup refuses forks.
	events := filepath.Join(dir, "pids.events")
	if err := tstest.Poll(15*time.Second, func() error {
		select {
		case <-bomb.proc.(*process).done:
			out, code := bomb.wait(t)
			t.Fatalf("the sandbox ended during its fork bomb: exit %d\n%s", code, out)
		default:
		}
		if b, err := os.ReadFile(events); err == nil && !strings.Contains(string(b), "max 0") {
			return nil
		}
		if _, err := os.Stat(events); err != nil {
			// v1 has no pids.events before 4.x kernels; the count is enough.
			if readNumber(t, filepath.Join(dir, "pids.current")) >= limit-5 {
				return nil
			}
		}
		return errors.New("below the process limit")
	}); err != nil {
		t.Fatalf("the sandbox never reached its process limit (pids.current %d)", readNumber(t, filepath.Join(dir, "pids.current")))
	}
	b, err := os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		out, code := bomb.wait(t)
		t.Fatalf("the sandbox ended during its fork bomb: exit %d\n%s", code, out)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n > limit {
		t.Errorf("the sandbox holds %d tasks, over its limit of %d", n, limit)
	}
	// The host still starts programs, and so does another sandbox, while the bomb runs.
	if out, err := osexec.Command("/bin/echo", "host-ok").Output(); err != nil || !strings.Contains(string(out), "host-ok") {
		t.Errorf("the host could not start a program during the fork bomb: %v %q", err, out)
	}
	other := newWorld(t)
	out, code := startLimited(t, &Provider{}, other, sandbox.Limits{}, `sh -c 'echo other-ok'`).wait(t)
	if code != 0 || !strings.Contains(out, "other-ok") {
		t.Errorf("another sandbox failed during the fork bomb: exit %d\n%s", code, out)
	}
	select {
	case <-bomb.proc.(*process).done:
		out, code := bomb.wait(t)
		t.Errorf("the sandbox's first process did not outlive the fork bomb: exit %d\n%s", code, out)
	default:
	}
	dirs := cgroupDirs(bomb.proc)
	must(t, bomb.proc.Kill())
	bomb.wait(t)
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("the sandbox's cgroup %s is left behind", d)
		}
	}
}

// TestMemoryBomb: a program that takes memory without end inside is killed at the sandbox's
// memory limit, the sandbox's other processes and the host go on, and so does another
// sandbox.
func TestMemoryBomb(t *testing.T) {
	needLimit(t, "memory")
	w := newWorld(t)
	const limit = 64 << 20
	// tail keeps the last lines, and /dev/zero has no newline: it holds all it reads.
	s := startLimited(t, &Provider{}, w, sandbox.Limits{Memory: sandbox.Amount{Bytes: limit}}, `
head -c 1G /dev/zero | tail >/dev/null; echo "bomb=$?"
echo after-the-bomb`)
	out, code := s.wait(t)
	if code != 0 || !strings.Contains(out, "after-the-bomb") {
		t.Fatalf("the sandbox did not survive its memory bomb: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "bomb=137") {
		t.Errorf("the memory bomb was not killed (SIGKILL from the OOM killer, 137):\n%s", out)
	}
	other := newWorld(t)
	out, code = startLimited(t, &Provider{}, other, sandbox.Limits{}, `echo other-ok`).wait(t)
	if code != 0 || !strings.Contains(out, "other-ok") {
		t.Errorf("another sandbox failed after the memory bomb: exit %d\n%s", code, out)
	}
}

// TestMemoryPeakBounded reads the memory a bomb reached from its cgroup while the sandbox
// runs: no more than the limit.
func TestMemoryPeakBounded(t *testing.T) {
	needLimit(t, "memory")
	w := newWorld(t)
	const limit = 64 << 20
	s := startLimited(t, &Provider{}, w, sandbox.Limits{Memory: sandbox.Amount{Bytes: limit}}, `
head -c 1G /dev/zero | tail >/dev/null; echo "bomb=$?"; sleep 600`)
	cg := s.proc.(*process).cg
	dir := cg.serving["memory"]
	peak := filepath.Join(dir, "memory.max_usage_in_bytes")
	if dir == cg.v2Dir {
		peak = filepath.Join(dir, "memory.peak")
	}
	// The OOM killer's count: memory.oom_control in v1, memory.events in v2.
	events := filepath.Join(dir, "memory.oom_control")
	if dir == cg.v2Dir {
		events = filepath.Join(dir, "memory.events")
	}
	tstest.WaitFor(t, 15*time.Second, func() error {
		b, _ := os.ReadFile(events)
		if strings.Contains(string(b), "oom_kill ") && !strings.Contains(string(b), "oom_kill 0") {
			return nil
		}
		return fmt.Errorf("the bomb never met the limit: %s = %q", events, b)
	})
	n := readNumber(t, peak)
	if n > limit {
		t.Errorf("the sandbox's memory reached %d bytes, over its limit of %d", n, limit)
	}
}

// TestCgroupGoneAfterAbandon: a sandbox a caller abandons (openworker run's last step) is
// not waited for, and leaves no cgroup either: once it has ended, its cgroups are removed
// while this process lives (a caller that exits first leaves them empty, for the next
// start's sweep: TestStaleCgroupsSwept).
func TestCgroupGoneAfterAbandon(t *testing.T) {
	if !limitsHere(t).made() {
		t.Skip("no cgroup can be made here")
	}
	w := newWorld(t)
	s := startLimited(t, &Provider{}, w, sandbox.Limits{}, `sleep 600 & sleep 600`)
	dirs := cgroupDirs(s.proc)
	for _, d := range dirs {
		if !exists(d) {
			t.Fatalf("the running sandbox's cgroup %s is missing", d)
		}
	}
	must(t, s.proc.(sandbox.Abandoner).Abandon())
	select {
	case <-s.proc.(*process).done:
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned sandbox did not end")
	}
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("the abandoned sandbox's cgroup %s is left behind", d)
		}
	}
}

// TestCgroupNotDelegated: where no cgroup can be made the sandbox runs, and says which
// limits are not in force and why.
func TestCgroupNotDelegated(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-hierarchy")
	pv := &Provider{cgroups: &cgroupHost{v1: map[string]v1Hierarchy{"pids": {mount: missing, own: "/"}, "memory": {mount: missing, own: "/"}}}}
	w := newWorld(t)
	s := startLimited(t, pv, w, sandbox.Limits{}, "echo ran")
	out, code := s.wait(t)
	if code != 0 || !strings.Contains(out, "ran") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	active := strings.Join(s.proc.Active(), "\n")
	for _, want := range []string{
		"limit not in force: processes 4096: cannot make a cgroup v1 in " + missing + ": no such file or directory",
		"limit not in force: memory ",
		"limit not in force: cpu weight " + strconv.Itoa(sandbox.DefaultCPUWeight()) + ": this kernel has no cpu controller in any cgroup hierarchy",
	} {
		if !strings.Contains(active, want) {
			t.Errorf("want %q in the active list:\n%s", want, active)
		}
	}
}

// TestStaleCgroupsSwept: an empty cgroup a dead openworker process left is removed by the
// next sandbox; a live one's is left alone.
func TestStaleCgroupsSwept(t *testing.T) {
	cg := limitsHere(t)
	if len(cg.v1Dirs) == 0 && cg.v2Dir == "" {
		t.Skip("no cgroup can be made here")
	}
	base := filepath.Dir(cg.v2Dir)
	if cg.v2Dir == "" {
		base = filepath.Dir(cg.v1Dirs[0])
	}
	// A PID that is not running: past the largest this kernel hands out.
	dead := filepath.Join(base, cgroupPrefix+"4194304-1")
	live := filepath.Join(base, cgroupPrefix+"1-7")
	must(t, os.Mkdir(dead, 0o755))
	must(t, os.Mkdir(live, 0o755))
	defer os.Remove(live)
	defer os.Remove(dead)
	w := newWorld(t)
	startLimited(t, &Provider{}, w, sandbox.Limits{}, "true").wait(t)
	if exists(dead) {
		t.Errorf("the dead process's cgroup %s was not removed", dead)
	}
	if !exists(live) {
		t.Errorf("a live process's cgroup %s was removed", live)
	}
}

// TestApplyWritesFiles: each limit goes into the file its controller has in the cgroup
// version that serves it (the v2 files cannot be had on a machine whose controllers are
// all v1, so this looks at what is written, in folders standing for the cgroups).
func TestApplyWritesFiles(t *testing.T) {
	l := sandbox.Limits{Processes: 500, Memory: sandbox.Amount{Percent: 25}, CPUWeight: 50}
	const total = 8 << 30
	for _, tc := range []struct {
		name string
		v2   bool
		want map[string]string
	}{
		{"v1", false, map[string]string{"pids.max": "500", "memory.limit_in_bytes": "2147483648", "memory.memsw.limit_in_bytes": "2147483648", "cpu.shares": "512"}},
		{"v2", true, map[string]string{"pids.max": "500", "memory.max": "2147483648", "memory.swap.max": "0", "cpu.weight": "50"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cg := &cgroup{serving: map[string]string{"pids": dir, "memory": dir, "cpu": dir}, missing: map[string]string{}}
			if tc.v2 {
				cg.v2Dir = dir
			}
			words, err := cg.apply(l, total)
			must(t, err)
			for file, want := range tc.want {
				b, err := os.ReadFile(filepath.Join(dir, file))
				if err != nil || string(b) != want {
					t.Errorf("%s = %q (%v), want %q", file, b, err, want)
				}
			}
			version := "v1"
			if tc.v2 {
				version = "v2"
			}
			if want := "limits: processes 500 (cgroup " + version + "), memory 2GiB (cgroup " + version + "), cpu weight 50 (cgroup " + version + ")"; !slices.Contains(words, want) {
				t.Errorf("words %q, want %q", words, want)
			}
		})
	}
}
