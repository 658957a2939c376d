package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/runner"
)

// wallSecurebits keep a uid 0 inside (the host's root, mapped to itself) from getting
// capabilities back when it executes a program, and everything else from gaining any.
const wallSecurebits = secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
	secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientLocked

// prepareBirth readies this thread to execute a wall builder that is born with an empty
// bounding set and the wall's securebits on every thread, holding the capabilities this
// thread holds. Its permitted capabilities are made inheritable and ambient first: ambient
// ones survive an exec whatever the bounding set, and for a uid 0 too once its securebits
// take away root's own route to them. changed says the thread is not as it was; ok, that
// every step took. A step that did not is made inside, on every thread.
func prepareBirth() (changed, ok bool) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false, false
	}
	for i := range data {
		data[i].Inheritable |= data[i].Permitted
	}
	if unix.Capset(&hdr, &data[0]) != nil {
		return false, false
	}
	ok = true
	for c, last := 0, lastCap(); c <= last; c++ {
		if data[c/32].Permitted&(1<<(c%32)) != 0 && unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0) != nil {
			ok = false
		}
	}
	// Without every capability ambient, a uid 0 with these bits would lose the missing ones.
	if !ok || unix.Prctl(unix.PR_SET_SECUREBITS, wallSecurebits, 0, 0, 0) != nil {
		ok = false
	}
	for c, last := 0, lastCap(); c <= last; c++ {
		if unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0) != nil {
			ok = false
		}
	}
	return true, ok
}

// A root caller's wall builder has no user namespace of its own: it is born with the
// caller's capabilities and bounding set, and the Go runtime starts its threads with them,
// before the wall exists. The builder must empty the bounding set of every one of them, and
// a bounding set is emptied one capability at a time: some forty rounds of signals to every
// thread (psx), four milliseconds of a four-millisecond run.
//
// So it is born with an empty one, and with the wall's securebits: it is started from a
// thread of this process that has them (prepareBirth). That thread starts builders and
// nothing else, and never ends: a builder's death signal (Pdeathsig) follows the thread that
// started it. An ordinary user's builders are started from such a thread too, unprepared.
//
// On cgroup v1 the thread is also how a builder is born inside its cgroups. Moving a process
// into a v1 cgroup (cgroup.procs) takes the kernel's global lock over every thread group,
// which, when no move happened within the last grace period, waits for an RCU grace period:
// 8-12 ms, most of a run, whenever an agent paused between commands. A thread that moves
// itself (writes 0 to tasks) does not take that lock: it cannot exit or exec under the
// move. Naming a thread by its ID, even its own, does. So the thread moves itself into the
// sandbox's v1 cgroups, clones the builder there, which is born inside as CLONE_INTO_CGROUP
// does on v2, and moves back. The Go runtime never clones its own threads from a locked thread (it hands that to
// its template thread), so nothing else is born inside. A thread that cannot move back is
// retired: it serves no more launches and stays parked, for its builders' sake.

type launchRequest struct {
	cmd *exec.Cmd
	// slack is the timer slack of the caller's thread, which the builder is to take back
	// (startCoarse); 0 when unknown.
	slack int
	// into are the v1 cgroups (directories) the builder is to be born in; each lies in this
	// process's own cgroup of its hierarchy, where the thread goes back to.
	into []string
	done chan launched
}

type launched struct {
	slack uint64
	// born says the builder was born in every cgroup of into; else it is in none of them
	// and the caller moves it (cgroup.procs).
	born bool
	err  error
}

// launcher owns the launch thread; a new one is started when the last was retired.
type launcher struct {
	mu    sync.Mutex
	queue chan<- launchRequest
}

var builderLauncher launcher

// get is the launch thread's queue, started on first use.
func (l *launcher) get() chan<- launchRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queue == nil {
		l.queue = l.start()
	}
	return l.queue
}

func (l *launcher) start() chan<- launchRequest {
	queue := make(chan launchRequest)
	prepare := !ownUserNS()
	go func() {
		runtime.LockOSThread() // for good: see above
		if prepare {
			// What did not take is made inside, on every thread, at that cost.
			prepareBirth()
		}
		for req := range queue {
			if req.slack > 0 {
				_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(req.slack), 0, 0, 0)
			}
			entered, enterErr := moveThread(req.into, nil)
			var r launched
			r.slack, r.err = startCoarse(req.cmd)
			r.born = enterErr == nil && len(req.into) > 0
			_, back := moveThread(nil, entered)
			req.done <- r
			if back != nil {
				l.retire(queue)
				select {}
			}
		}
	}()
	return queue
}

// retire stops handing out queue: the next launch starts a new thread.
func (l *launcher) retire(queue chan<- launchRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queue == queue {
		l.queue = nil
	}
}

// moveThread moves the calling thread into each cgroup of into, in turn; when one refuses
// it moves back out of the ones it entered and says why. With into empty it moves the
// thread back out of the cgroups of out (into the parent of each, this process's own cgroup
// there). It returns the cgroups the thread is in once it is done.
func moveThread(into, out []string) ([]string, error) {
	// "0" is the writing thread itself: see above.
	self := []byte("0")
	if len(into) == 0 {
		var err error
		for _, dir := range out {
			if e := os.WriteFile(filepath.Join(filepath.Dir(dir), "tasks"), self, 0); e != nil && err == nil {
				err = e
			}
		}
		return nil, err
	}
	for i, dir := range into {
		if err := os.WriteFile(filepath.Join(dir, "tasks"), self, 0); err != nil {
			if _, back := moveThread(nil, into[:i]); back != nil {
				return into[:i], back
			}
			return nil, err
		}
	}
	return into, nil
}

// startBuilder starts cmd from the launch thread, born in the v1 cgroups into where it can
// be; born says whether it was.
func startBuilder(cmd *exec.Cmd, into []string) (slack uint64, born bool, err error) {
	queue := builderLauncher.get()
	// The builder takes back the caller's timer slack, not this thread's.
	runtime.LockOSThread()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	runtime.UnlockOSThread()
	if err != nil {
		own = 0
	}
	done := make(chan launched, 1)
	queue <- launchRequest{cmd, own, into, done}
	r := <-done
	return r.slack, r.born, r.err
}

// builderBinary is the program a wall builder is started from: the small helper beside this
// binary when there is one (runner.Binary), which links only what runs inside; otherwise
// this binary itself, by /proc/self/exe, whatever its name or wherever it was moved. Either
// calls MaybeRunInit first in main.
var builderBinary = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return "/proc/self/exe"
	}
	if bin, err := runner.Binary(); err == nil && bin != exe {
		return bin
	}
	return "/proc/self/exe"
})

// lastCap is the highest capability this kernel knows: the last one the bounding set
// answers for. It asks once per capability, so a loop over them calls it once, not per
// round (that was some 1,700 system calls in each of the launch and the builder).
func lastCap() int {
	last := 0
	for unix.Prctl(unix.PR_CAPBSET_READ, uintptr(last+1), 0, 0, 0) == nil {
		last++
	}
	return last
}
