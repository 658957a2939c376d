package linux

import (
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
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
	for c := 0; c <= lastCap(); c++ {
		if data[c/32].Permitted&(1<<(c%32)) != 0 && unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, uintptr(c), 0, 0) != nil {
			ok = false
		}
	}
	// Without every capability ambient, a uid 0 with these bits would lose the missing ones.
	if !ok || unix.Prctl(unix.PR_SET_SECUREBITS, wallSecurebits, 0, 0, 0) != nil {
		ok = false
	}
	for c := 0; c <= lastCap(); c++ {
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
// started it.

type launchRequest struct {
	cmd *exec.Cmd
	// slack is the timer slack of the caller's thread, which the builder is to take back
	// (startCoarse); 0 when unknown.
	slack int
	done  chan launched
}

type launched struct {
	slack uint64
	err   error
}

// rootLauncher is that thread's queue; nil if it could not be prepared, and builders are
// then started from any thread (their bounding sets are emptied inside, at that cost).
var rootLauncher = sync.OnceValue(func() chan<- launchRequest {
	ready := make(chan chan<- launchRequest)
	go func() {
		runtime.LockOSThread() // for good: see above
		if changed, _ := prepareBirth(); !changed {
			runtime.UnlockOSThread() // nothing changed
			ready <- nil
			return
		}
		// What did not take is made inside, on every thread, at that cost.
		queue := make(chan launchRequest)
		ready <- queue
		for req := range queue {
			if req.slack > 0 {
				_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(req.slack), 0, 0, 0)
			}
			slack, err := startCoarse(req.cmd)
			req.done <- launched{slack, err}
		}
	}()
	return <-ready
})

// startRootBuilder starts cmd, a builder without a user namespace of its own, from the
// launcher thread when there is one; as startCoarse otherwise.
func startRootBuilder(cmd *exec.Cmd) (uint64, error) {
	queue := rootLauncher()
	if queue == nil {
		return startCoarse(cmd)
	}
	// The builder takes back the caller's timer slack, not this thread's.
	runtime.LockOSThread()
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	runtime.UnlockOSThread()
	if err != nil {
		slack = 0
	}
	done := make(chan launched, 1)
	queue <- launchRequest{cmd, slack, done}
	r := <-done
	return r.slack, r.err
}

// lastCap is the highest capability this kernel knows: the last one the bounding set
// answers for.
func lastCap() int {
	last := 0
	for unix.Prctl(unix.PR_CAPBSET_READ, uintptr(last+1), 0, 0, 0) == nil {
		last++
	}
	return last
}
