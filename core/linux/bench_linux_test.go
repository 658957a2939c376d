package linux

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// benchWorld is a session as the benchmarks use it: system paths, a writable project, a
// read-only folder inside it, a private tmp; no network.
func benchWorld(b *testing.B) (*world, *policy.Policy) {
	base := b.TempDir()
	w := &world{
		home:       filepath.Join(base, "home"),
		privateTmp: filepath.Join(base, "private-tmp"),
	}
	w.project = filepath.Join(w.home, "project")
	w.readonly = filepath.Join(w.project, "vendor")
	for _, d := range []string{w.readonly, w.privateTmp + "/home"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p := &policy.Policy{
		Writable:   []string{w.project},
		ReadOnly:   []string{w.readonly},
		PrivateTmp: w.privateTmp,
		Home:       w.privateTmp + "/home",
		UserHome:   w.home,
		System:     policy.SystemPaths("linux"),
		Network:    policy.None,
	}
	return w, p
}

// BenchmarkWallTrue: build the wall, run true, tear down.
func BenchmarkWallTrue(b *testing.B) {
	_, p := benchWorld(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		proc, err := (&Provider{}).Start(context.Background(), p, sandbox.RunnerSpec{Path: truePath, Dir: "/"})
		if err != nil {
			b.Fatal(err)
		}
		if err := proc.Wait(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	reportMedian(b, times)
}

// BenchmarkBwrapTrue is the yardstick: bubblewrap with the same binds running true.
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bubblewrap is not installed; install the bubblewrap package for this yardstick")
	}
	_, p := benchWorld(b)
	truePath, _ := exec.LookPath("true")
	args := []string{"--unshare-all", "--die-with-parent"}
	for _, s := range policy.Minimal(p.System) {
		fi, err := os.Lstat(s)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(s)
			args = append(args, "--symlink", target, s)
		default:
			args = append(args, "--ro-bind", s, s)
		}
	}
	args = append(args,
		"--bind", p.PrivateTmp, "/tmp",
		"--bind", p.PrivateTmp, p.PrivateTmp,
		"--bind", p.Writable[0], p.Writable[0],
		"--ro-bind", p.ReadOnly[0], p.ReadOnly[0],
		"--proc", "/proc", "--dev", "/dev", "--chdir", "/", truePath)
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v\n%s", err, out)
		}
		times = append(times, time.Since(t0))
	}
	reportMedian(b, times)
}

func reportMedian(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

// BenchmarkIdleSandboxMemory measures what one idle sandbox costs: its PID 1 (the wall
// builder) plus an idle runner that is this same Go binary waiting on fd 3, as the real
// runner does. PSS splits pages shared with the core (the same binary) fairly; RSS counts
// them whole.
func BenchmarkIdleSandboxMemory(b *testing.B) {
	_, p := benchWorld(b)
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	if self, err = policy.Resolve(self); err != nil {
		b.Fatal(err)
	}
	p.RunnerFiles = []string{self}
	var pss, rss []float64
	for b.Loop() {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		core, runnerEnd := os.NewFile(uintptr(fds[0]), "core"), os.NewFile(uintptr(fds[1]), "runner")
		proc, err := (&Provider{}).Start(context.Background(), p, sandbox.RunnerSpec{
			Path: self, Env: []string{idleRunner + "=1"}, Dir: "/", Conn: runnerEnd,
		})
		runnerEnd.Close()
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // let both settle into idle
		ps, rs := treeMemory(b, proc.Pid())
		pss, rss = append(pss, ps), append(rss, rs)
		core.Close() // the runner sees EOF and exits; so does the sandbox
		if err := proc.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(pss)
	slices.Sort(rss)
	b.ReportMetric(pss[len(pss)/2]/1024, "MiB-pss")
	b.ReportMetric(rss[len(rss)/2]/1024, "MiB-rss")
}

// treeMemory sums Pss and Rss (KiB) of pid and its children.
func treeMemory(b *testing.B, pid int) (pss, rss float64) {
	pids := []int{pid}
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(kids)) {
		if k, err := strconv.Atoi(f); err == nil {
			pids = append(pids, k)
		}
	}
	if len(pids) < 2 {
		b.Fatalf("the sandbox has no runner under PID 1 (%d)", pid)
	}
	for _, p := range pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			v, _ := strconv.ParseFloat(fields[1], 64)
			switch fields[0] {
			case "Pss:":
				pss += v
			case "Rss:":
				rss += v
			}
		}
		f.Close()
	}
	return pss, rss
}
