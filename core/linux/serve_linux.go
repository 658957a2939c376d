package linux

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/runner"
)

// serveRunner makes the wall's first process the tool runner as well: it serves tool calls on
// the core's socket until the core hangs up, and reaps orphans meanwhile, as init must.
//
// Every thread of this process is behind the wall (buildWall puts each part on all of them),
// but every tool call still runs on the thread that built it: the socket is read and each
// call carried out on the main goroutine, which is locked to it, and the guard refuses a
// call anywhere else, so that a part that ever came to hold for one thread only would still
// hold for every call. Commands are forked from it and inherit exactly its wall. Other
// goroutines only copy output between descriptors already open, wait for children and send
// signals.
func serveRunner(r runnerSetup, connFD int) int {
	walled := unix.Gettid()
	guard := func() error {
		if unix.Gettid() != walled {
			return errors.New("runner: a tool call reached a thread outside the wall; it was refused")
		}
		return nil
	}
	children := newReaper()
	defer children.stop()
	conn := os.NewFile(uintptr(connFD), "runner-conn")
	srv := runner.NewServer(runner.Config{Dir: r.Dir, Env: r.Env, Guard: guard, Children: children, Idle: alone})
	if err := srv.Serve(conn); err != nil {
		fmt.Fprintln(os.Stderr, "openworker runner:", err)
		return 1
	}
	return 0
}

// alone says whether this process, the sandbox's init, is all that runs in the sandbox:
// every other process its /proc lists has exited (a zombie the reaper has not collected yet
// runs nothing).
func alone() bool {
	f, err := os.Open("/proc")
	if err != nil {
		return false
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return false
	}
	self := strconv.Itoa(os.Getpid())
	for _, name := range names {
		if name == self || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		// The state follows the command name, which may itself hold ") ".
		if i := bytes.LastIndex(b, []byte(") ")); i < 0 || i+2 >= len(b) || b[i+2] != 'Z' {
			return false
		}
	}
	return true
}

// reaper collects the exit status of every child that is not one of the runner's own
// commands: orphans that the kernel hands to the sandbox's init. It must leave the runner's
// commands alone, whose status their Wait collects, so it only peeks (WNOWAIT) before it
// reaps, and a command is registered under the same lock as it is forked.
type reaper struct {
	mu   sync.Mutex
	ours map[int]bool
	sig  chan os.Signal
	done chan struct{}
}

func newReaper() *reaper {
	r := &reaper{ours: map[int]bool{}, sig: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(r.sig, unix.SIGCHLD)
	go func() {
		defer close(r.done)
		for range r.sig {
			r.reap()
		}
	}()
	return r
}

func (r *reaper) stop() {
	signal.Stop(r.sig)
	close(r.sig)
	<-r.done
}

// Start forks a command with the lock held, so the reaper cannot see it before it is ours.
func (r *reaper) Start(start func() (int, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := start()
	if err == nil {
		r.ours[pid] = true
	}
	return err
}

// Done forgets a command whose status was collected, and reaps the orphans it may have
// hidden while it was a zombie.
func (r *reaper) Done(pid int) {
	r.mu.Lock()
	delete(r.ours, pid)
	r.mu.Unlock()
	r.reap()
}

// reap collects every exited orphan, stopping at the first exited child that is a command.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		pid, err := peekExited()
		if err != nil || pid == 0 || r.ours[pid] {
			return
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// siginfo is the head of the kernel's siginfo_t as waitid fills it for a child.
type siginfo struct {
	Signo, Errno, Code, _ int32
	Pid                   int32
	Uid                   uint32
	Status                int32
	_                     [128 - 7*4]byte
}

// peekExited returns an exited child's PID without collecting its status, or 0 if none has
// exited.
func peekExited() (int, error) {
	var info siginfo
	for {
		_, _, errno := unix.Syscall6(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&info)),
			unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return int(info.Pid), nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}
