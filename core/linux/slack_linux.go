package linux

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// The Go runtime's monitor thread (sysmon) sleeps 20 µs at a time for a process's first
// milliseconds, and the kernel's default timer slack stretches each sleep by up to 50 µs:
// about sixty wakeups, each a pair of context switches, in the life of an `openworker run`,
// and as many in its wall builder's first milliseconds. On two cores that was 0.5-1 ms of an
// 11-13 ms run, and a sixth of its CPU time (twice that in a cgo build). The monitor's work
// (taking a processor back from a blocked system call, preempting a goroutine after 10 ms)
// tolerates a coarser slack, so the two processes on a sandbox's start give their monitor
// 1 ms.
//
// Not every thread: a scheduler thread that steals work from another processor first sleeps
// 3 µs while it holds its own, and a coarse slack stretches that into a stall. The CLI sets
// only its monitor's (threads the monitor starts inherit it; a few do, and a stall of theirs
// is at most this long). Every thread of the builder starts with it, but the builder runs
// on one processor, where there is nothing to steal from, and its main thread, which forks
// every command, takes back the caller's.
const monitorSlack = 1_000_000 // ns

// CoarsenMonitor gives this process's runtime monitor a coarse timer slack. The runtime
// starts it before any package's code runs, as its first thread after the main one, so it
// is the thread with the lowest ID above the process's; when thread IDs have wrapped around
// the process cannot tell, and leaves it. Setting another thread's slack takes
// CAP_SYS_NICE; without it, or on any other error, nothing changes.
func CoarsenMonitor() {
	tids, err := threadIDs("self")
	if err != nil {
		return
	}
	pid, monitor := os.Getpid(), 0
	for _, tid := range tids {
		if tid < pid {
			return
		}
		if tid > pid && (monitor == 0 || tid < monitor) {
			monitor = tid
		}
	}
	if monitor != 0 {
		// The per-thread file is /proc/TID/timerslack_ns: /proc/self/task/TID has none.
		_ = os.WriteFile("/proc/"+strconv.Itoa(monitor)+"/timerslack_ns", []byte(strconv.Itoa(monitorSlack)), 0)
	}
}

// threadIDs lists the threads of a process ("self" or a PID) by their IDs.
func threadIDs(pid string) ([]int, error) {
	d, err := os.Open("/proc/" + pid + "/task")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(names))
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			return nil, err
		}
		tids = append(tids, tid)
	}
	return tids, nil
}

// startCoarse starts cmd from a thread whose timer slack is monitorSlack for the moment of
// the clone, so that every thread of the child, its runtime's monitor among them, starts with
// that slack; needing no privilege, this works for any caller. It returns the slack the
// thread had, the caller's own, which the child's main thread must take back before it
// starts anything (wallSetup.TimerSlack), or 0 when it started cmd with that slack unchanged.
func startCoarse(cmd *exec.Cmd) (uint64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	// A real-time thread has no slack (0), and a set would not take.
	if err != nil || own <= 0 || unix.Prctl(unix.PR_SET_TIMERSLACK, monitorSlack, 0, 0, 0) != nil {
		return 0, cmd.Start()
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(own), 0, 0, 0)
	return uint64(own), cmd.Start()
}
