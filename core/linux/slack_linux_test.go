package linux

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
)

// threadSlack reads a thread's timer slack from the host; another thread's takes CAP_SYS_NICE.
func threadSlack(t *testing.T, tid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/timerslack_ns")
	if err != nil {
		t.Skipf("read a thread's timer slack: %v (needs CAP_SYS_NICE)", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	must(t, err)
	return n
}

func threads(t *testing.T, pid int) []int {
	t.Helper()
	tids, err := threadIDs(strconv.Itoa(pid))
	must(t, err)
	return tids
}

// The builder's runtime monitor starts with the coarse slack, and its main thread, which
// forks the runner's commands, takes back the caller's, an unusual one here, before a command
// runs: commands time their sleeps as they would outside.
func TestCommandsKeepTheCallersTimerSlack(t *testing.T) {
	const callers = 123_456
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	must(t, err)
	must(t, unix.Prctl(unix.PR_SET_TIMERSLACK, callers, 0, 0, 0))
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(own), 0, 0, 0)

	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	p.RunnerFiles = []string{"/nonexistent/openworker"}
	// Provider.Start starts the builder from this goroutine's thread.
	c, proc := startServed(t, &Provider{}, w, p)
	if r := execIn(t, c, "cat /proc/self/timerslack_ns"); strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(callers) {
		t.Errorf("a command's timer slack = %q (%s), want the caller's %d", r.Stdout, r.Stderr, callers)
	}
	pid := proc.Pid()
	if got := threadSlack(t, pid); got != callers {
		t.Errorf("the builder's main thread has a timer slack of %d ns, want the caller's %d", got, callers)
	}
	coarse := 0
	for _, tid := range threads(t, pid) {
		if threadSlack(t, tid) == monitorSlack {
			coarse++
		}
	}
	if coarse == 0 {
		t.Errorf("no thread of the builder has the coarse timer slack: its runtime monitor did not get it")
	}
	if got, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); got != callers {
		t.Errorf("the caller's thread was left with a timer slack of %d ns, want its own %d", got, callers)
	}

	// A program started behind the wall, rather than served by it, is forked from the same
	// thread.
	if out, code := run(t, w, w.policy(t, policy.None, 0), "cat /proc/self/timerslack_ns"); code != 0 || strings.TrimSpace(out) != strconv.Itoa(callers) {
		t.Errorf("the started program's timer slack = %q (exit %d), want the caller's %d", out, code, callers)
	}
}

// CoarsenMonitor finds the runtime's monitor: the thread it coarsens is the one that spends
// its life in nanosleep, while a busy goroutine keeps the monitor from parking.
func TestCoarsenMonitorFindsTheMonitor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting another thread's timer slack takes CAP_SYS_NICE")
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	CoarsenMonitor()
	pid := os.Getpid()
	var monitor []int
	for _, tid := range threads(t, pid) {
		if tid != pid && threadSlack(t, tid) == monitorSlack {
			monitor = append(monitor, tid)
		}
	}
	if len(monitor) == 0 {
		t.Skip("thread IDs wrapped around since this process started: CoarsenMonitor leaves the slack")
	}
	// Threads the monitor itself starts inherit its slack; the first one is the monitor.
	tid := monitor[0]
	for _, other := range monitor {
		tid = min(tid, other)
	}
	// A look finds the thread in a system call, or running (when the busy goroutine and this
	// one hold both processors, a monitor that woke waits for one).
	sleeping, blocked := 0, 0
	for look := 0; blocked < 20 && look < 400; look++ {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
		must(t, err)
		if f := strings.Fields(string(b)); len(f) > 0 && f[0] != "running" {
			blocked++
			if f[0] == strconv.Itoa(unix.SYS_NANOSLEEP) {
				sleeping++
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	if blocked < 20 || sleeping < blocked*3/4 {
		t.Errorf("thread %d, given the coarse slack, was in nanosleep in %d of the %d looks that found it in a system call; the runtime's monitor sleeps there", tid, sleeping, blocked)
	}
}
