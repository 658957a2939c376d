package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"

	"github.com/openworker/openworker/core/policy"
)

// wallArg0 is the argv[0] the provider gives the wall builder. A program inside a sandbox
// that starts the binary with it gets nowhere: without the setup socket the builder stops
// at its first step, and it has no capabilities to build anything with.
const wallArg0 = "openworker-linux-wall"

// setupFD is the builder's one inherited descriptor after stdin, stdout and stderr: the setup
// socketpair, instructions (with the runner's socket) in, reports (and the listener) out.
const setupFD = 3

// oldRoot and newRoot are where the host's root and the sandbox's root sit in the staging
// root while the wall is built.
const (
	oldRoot = "/oldroot"
	newRoot = "/newroot"
)

// MaybeRunInit turns this process into the wall builder if the linux provider started it
// as one, and then never returns. Otherwise it returns at once, having only compared
// os.Args[0] with a constant.
//
// Every binary that starts sandboxes with Provider must call it first thing in main, before
// flags are parsed or goroutines started; a test package that does calls it first in
// TestMain. Without it the provider's Start fails: the binary it starts again would run its
// normal main instead of building the wall.
func MaybeRunInit() {
	if len(os.Args) == 0 || os.Args[0] != wallArg0 && os.Args[0] != relayProbeArg0 {
		return
	}
	// The runner and every command are forked from this thread, which joined the sandbox's
	// network first and whose timer slack is the caller's, so it is locked and never
	// unlocked. The wall itself is put on every thread (see buildWall).
	runtime.LockOSThread()
	if os.Args[0] == relayProbeArg0 {
		os.Exit(relayProbe())
	}
	emptyBoundingSet()
	os.Exit(runWall())
}

// emptyBoundingSet makes the builder start again, once, as prepareBirth leaves it: with an
// empty bounding set and the wall's securebits on every thread the runtime starts. Both
// belong to each thread, and the bounding set is emptied one capability at a time; made on
// every thread, that takes some forty rounds of signals to each (psx), several milliseconds,
// where executing the binary again takes well under one. A root caller's builder is born so
// already (startRootBuilder); one in a user namespace of its own gets a full bounding set
// from the kernel with the namespace. Should a step fail, the builder goes on as it is and
// makes the rest on every thread later.
func emptyBoundingSet() {
	if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil || in == 0 {
		return
	}
	changed, ok := prepareBirth()
	// This thread is not as the other threads are any more, until the exec makes it the
	// only one.
	threadsDiffer = changed
	if ok {
		_ = unix.Exec("/proc/self/exe", os.Args, os.Environ())
	}
}

// threadsDiffer says that emptyBoundingSet changed this thread and did not execute the
// builder again: the other threads still have their bounding sets and securebits as they
// were.
var threadsDiffer bool

// stepError says which part of the wall failed.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }

func step(name string, err error) error {
	if err == nil {
		return nil
	}
	return &stepError{name, err}
}

// runWall builds the wall, then either serves the runner itself (a session's runner) or
// starts the given program behind it, reaps orphans as PID 1 and returns the exit code;
// returning ends the sandbox: the kernel kills whatever is left in a PID namespace whose init
// exits.
func runWall() int {
	// Whatever the core's process inherited without close-on-exec (from a shell, a
	// terminal multiplexer, a build tool) came along into this one; none of it may reach
	// the runner, which gets only what startRunner hands it, nor stay in this process,
	// which serves the file tools itself. The setup socket is kept from the runner.
	if err := closeInherited(setupFD); err != nil {
		report(wallReport{Step: "close inherited descriptors", Error: err.Error()}, -1)
		return 1
	}
	setup, conn, err := readSetup()
	if err != nil {
		report(wallReport{Step: "read the setup", Error: err.Error()}, -1)
		return 1
	}
	if setup.TimerSlack != 0 {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(setup.TimerSlack), 0, 0, 0); err != nil {
			report(wallReport{Step: "take back the caller's timer slack", Error: err.Error()}, -1)
			return 1
		}
	}
	runner, active, err := buildWall(setup, conn)
	if err != nil {
		var se *stepError
		r := wallReport{Step: "build the wall", Error: err.Error()}
		if errors.As(err, &se) {
			r.Step, r.Error = se.step, se.err.Error()
		}
		report(r, -1)
		return 1
	}
	if err := report(wallReport{Started: true, Active: active}, -1); err != nil {
		// The provider is gone; a runner nobody talks to must not keep running.
		return 1
	}
	if setup.Sockets {
		// Kept, for the core's asks of sockets in the sandbox's network (a published port).
		go serveSockets(setupFD)
	} else {
		unix.Close(setupFD)
	}
	if setup.Runner.Serve {
		return serveRunner(setup.Runner, conn)
	}
	// The builder's memory is the sandbox's overhead; give back what building took.
	debug.FreeOSMemory()
	return reap(runner)
}

// closeInherited closes every descriptor above setup that this process was given by exec,
// and marks setup close-on-exec. Exec closed the close-on-exec descriptors it was handed and
// the Go runtime opens its own close-on-exec, so one open without the flag came from the
// caller's process.
func closeInherited(setup int) error {
	unix.CloseOnExec(setup)
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= setup {
			continue
		}
		// The listing's own descriptor, closed by now, fails here and is passed over.
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			if err := unix.Close(fd); err != nil {
				return fmt.Errorf("close inherited descriptor %d: %w", fd, err)
			}
		}
	}
	return nil
}

// readSetup waits for the setup and the descriptors that come with it: the runner's socket
// (-1 if none) and the error output, which it puts in place of stdout and stderr.
func readSetup() (*wallSetup, int, error) {
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := unix.Recvmsg(setupFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, -1, err
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, -1, err
		}
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	var s *wallSetup
	switch {
	case flags&unix.MSG_TRUNC != 0:
		err = errors.New("the setup is larger than 1 MiB")
	case flags&unix.MSG_CTRUNC != 0:
		err = errors.New("the setup came with more descriptors than expected")
	default:
		s, err = decodeSetup(buf[:n])
	}
	if err == nil {
		want := 0
		for _, carried := range []bool{s.Runner.Conn, s.Stderr, s.NetNS, s.TmpMount} {
			if carried {
				want++
			}
		}
		if len(fds) != want {
			err = fmt.Errorf("the setup came with %d descriptors, not %d", len(fds), want)
		}
	}
	if err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, -1, err
	}
	conn := -1
	if s.Runner.Conn {
		conn, fds = fds[0], fds[1:]
	}
	if s.Stderr {
		// Not close-on-exec: a runner started from here inherits them as they are.
		unix.Dup3(fds[0], 1, 0)
		unix.Dup3(fds[0], 2, 0)
		unix.Close(fds[0])
		fds = fds[1:]
	}
	s.netnsFD, s.tmpFD = -1, -1
	if s.NetNS {
		s.netnsFD, fds = fds[0], fds[1:]
	}
	if s.TmpMount {
		s.tmpFD = fds[0]
	}
	return s, conn, nil
}

// report sends r to the provider, with fd attached when fd >= 0.
func report(r wallReport, fd int) error {
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	return unix.Sendmsg(setupFD, r.encode(), oob, nil, 0)
}

// buildWall runs every step of the wall in order and starts the runner behind it. It
// returns the runner's PID (inside) and the parts of the wall in force.
func buildWall(s *wallSetup, conn int) (int, []string, error) {
	// A process inside must not be able to ptrace or read the memory of its init, which
	// holds the setup socket and, until the wall is up, its capabilities.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, nil, step("make the wall builder non-dumpable", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 0, nil, step("make mounts private", err)
	}
	namespaces := "mount, pid, ipc, uts, " + networkWord(s.Network, s.Relay)
	if s.UserNS {
		namespaces = "user, " + namespaces
	}
	active := []string{"namespaces (" + namespaces + ")"}
	// No user namespaces inside: they are the usual door to kernel code an unprivileged
	// process cannot otherwise reach. The seccomp filter refuses them too; this limit also
	// holds where it cannot be installed. Counts are per user namespace, so 0 here binds
	// only the sandbox, and only in a user namespace of its own: outside one, this file is
	// the host's. Older kernels refuse the write.
	if s.UserNS && os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0) == nil {
		active = append(active, "no nested user namespaces")
	}
	if err := unix.Sethostname([]byte("openworker")); err != nil {
		return 0, nil, step("set the host name", err)
	}
	if s.netnsFD >= 0 {
		// This thread, from which the listener is made and every command started, joins
		// the network namespace made for it now; the others once the sandbox's /proc is
		// mounted, below.
		defer unix.Close(s.netnsFD)
		if err := unix.Setns(s.netnsFD, unix.CLONE_NEWNET); err != nil {
			return 0, nil, step("join the sandbox's network namespace", err)
		}
	}
	listener := -1
	if (s.Network != policy.Open || s.Relay) && !s.NetReady {
		if err := loopbackUp(); err != nil {
			return 0, nil, step("bring up lo in the sandbox's network", err)
		}
	}
	if s.Network == policy.Allowlist {
		fd, err := loopbackListener(s.ProxyPort)
		if err != nil {
			return 0, nil, step(fmt.Sprintf("listen on 127.0.0.1:%d and [::1]:%[1]d inside the sandbox", s.ProxyPort), err)
		}
		listener = fd
	}
	relay, stub := -1, -1
	// relayOn: the sandbox's network sends its connections to the relay, set up here or by
	// the core.
	relayOn := false
	if s.Relay {
		// Made before anything inside runs, as the proxy's listener is; by the core, when
		// it made the network (NetReady), which then holds the sockets. A kernel that turns
		// the rules down after the probe accepted them leaves the session as it was before
		// the relay: it says so, and runs.
		why := s.RelayErr
		if !s.NetReady {
			var err error
			if relay, stub, err = egressUp(); err != nil {
				relay, stub, why = -1, -1, err.Error()
			}
		}
		relayOn = why == ""
		if !relayOn {
			active = append(active, "no relay ("+why+")")
		} else {
			active = append(active, "relay: every TCP connection out goes through the allow list; DNS answered by the session's stub")
		}
	}
	defer func() {
		for _, fd := range []int{relay, stub} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	// The forwarded host ports are made here too, before anything inside runs: no server
	// of the sandbox's can have a forwarded port first, and none can take it after.
	forwards := make([]forwardFD, 0, len(s.Forwards))
	defer func() {
		for _, f := range forwards {
			if f.fd >= 0 {
				unix.Close(f.fd)
			}
		}
	}()
	for _, port := range s.Forwards {
		fd, err := loopbackListener(port)
		f := forwardFD{port: port, fd: fd}
		if err != nil {
			f.fd, f.err = -1, err.Error()
		}
		forwards = append(forwards, f)
	}
	binds, err := buildRoot(s, relayOn)
	if err != nil {
		return 0, nil, err
	}
	active = append(active, "minimal root (pivot_root)", "/proc read-only")

	// From here every step holds for every thread of this process, not only this one. The
	// runtime started the others before the wall existed, and they are not idle: a thread
	// the runtime starts later is cloned from one of them, and a served runner's goroutines
	// run on them. A step the kernel cannot make for all threads at once (as it does the
	// seccomp filter) is made on each by psx, which lists them in /proc: the sandbox's
	// /proc, mounted now (with cgo, psx reads /proc/<its PID>/task, and PID 1 of the host's
	// /proc is another process).
	if s.netnsFD >= 0 {
		if _, _, errno := psx.Syscall3(unix.SYS_SETNS, uintptr(s.netnsFD), unix.CLONE_NEWNET, 0); errno != 0 {
			return 0, nil, step("move every thread into the sandbox's network namespace", errno)
		}
	}
	if err := dropCapabilities(); err != nil {
		return 0, nil, step("drop capabilities", err)
	}
	active = append(active, "capabilities dropped")
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, nil, step("set no_new_privs", err)
	}
	// The filter before Landlock: installed on every thread at once, it sets no_new_privs
	// on each of them too, which Landlock needs on each. It refuses nothing the steps left
	// need.
	filtered, err := applySeccomp()
	if err != nil {
		return 0, nil, step("install the seccomp filter", err)
	}
	if !filtered {
		if err := allThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1); err != nil {
			return 0, nil, step("set no_new_privs on every thread", err)
		}
	}
	active = append(active, "no_new_privs")
	ll, err := applyLandlock(s, binds)
	if err != nil {
		return 0, nil, step("landlock", err)
	}
	active = append(active, ll)
	if filtered {
		active = append(active, seccompParts)
	}

	// The listeners go to the provider and are closed here before the runner exists, so no
	// process inside ever holds them.
	if listener >= 0 {
		err := report(wallReport{Listener: true}, listener)
		unix.Close(listener)
		if err != nil {
			return 0, nil, step("hand the proxy listener to the provider", err)
		}
	}
	if relay >= 0 {
		err := report(wallReport{Relay: true}, relay)
		unix.Close(relay)
		relay = -1
		if err == nil {
			err = report(wallReport{Stub: true}, stub)
			unix.Close(stub)
			stub = -1
		}
		if err != nil {
			return 0, nil, step("hand the relay's sockets to the provider", err)
		}
	}
	for i, f := range forwards {
		// A forward that could not be made is refused alone, with the reason: the session
		// runs without it and says so.
		err := report(wallReport{Forward: f.port, Error: f.err}, f.fd)
		if f.fd >= 0 {
			unix.Close(f.fd)
			forwards[i].fd = -1
		}
		if err != nil {
			return 0, nil, step(fmt.Sprintf("hand the forward of port %d to the provider", f.port), err)
		}
	}
	if s.Runner.Serve {
		return 0, active, nil
	}
	pid, err := startRunner(s.Runner, conn)
	if err != nil {
		return 0, nil, step("start the runner "+s.Runner.Path, err)
	}
	return pid, active, nil
}

func networkWord(n policy.Network, relay bool) string {
	if n == policy.Open && !relay {
		return "network shared with the host (its loopback and private services are reachable)"
	}
	return "net"
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// forwardFD is a forwarded port's listener inside, or why it could not be made.
type forwardFD struct {
	port int
	fd   int
	err  string
}

// loopbackListener listens on port at every address of the sandbox's network: one IPv6
// socket that takes IPv4 too, so 127.0.0.1 and [::1] (and the rest of 127/8) answer at
// one port, as the proxy does on the host, and no server inside can listen at the other
// address for a client to reach instead. The network holds only lo, so "every address" is
// loopback. Without IPv6 in the kernel, 127.0.0.1 alone.
func loopbackListener(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrInet6{Port: port})
		}
		if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT) {
			unix.Close(fd)
		}
	}
	if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT) {
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return -1, err
		}
		err = unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		err = unix.Listen(fd, unix.SOMAXCONN)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// buildRoot assembles the sandbox's root on a tmpfs and moves into it. The first pivot_root
// puts the host's root under /oldroot of a staging tmpfs, so that every bind (even of a
// folder under /tmp) has a source that the staging mounts do not cover.
//
// The read-only binds that no writable folder contains (the system paths, toolchains and
// most read-only folders) are made read-only together, with one mount_setattr over the new
// root that turns the root tmpfs read-only too: a mount_setattr each took a third as long
// as the binds themselves. So everything the root tmpfs is to hold (mount points, symlinks,
// /dev, /proc) is made first, and the writable folders, what lies inside them, and the
// devices are bound after it, each with its own attributes.
func buildRoot(s *wallSetup, resolv bool) ([]bindPlan, error) {
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k"); err != nil {
		return nil, step("mount the staging tmpfs", err)
	}
	for _, d := range []string{"/tmp" + oldRoot, "/tmp" + newRoot} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, step("make "+d, err)
		}
	}
	if err := unix.Mount("tmpfs", "/tmp"+newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return nil, step("mount the sandbox's root tmpfs", err)
	}
	if err := unix.PivotRoot("/tmp", "/tmp"+oldRoot); err != nil {
		return nil, step("pivot_root into the staging root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, step("enter the staging root", err)
	}
	if s.tmpFD >= 0 {
		if err := attachTmp(s); err != nil {
			return nil, err
		}
	}
	empty := &emptySources{file: -1, dir: -1}
	binds, err := prepareBinds(s.Mounts, empty)
	defer closeSources(binds, empty)
	if err != nil {
		return nil, err
	}
	if err := prepareDev(); err != nil {
		return nil, err
	}
	if err := hideHome(s.UserHome); err != nil {
		return nil, err
	}
	if resolv {
		if err := writeResolvConf(newRoot); err != nil {
			return nil, step("write the sandbox's /etc/resolv.conf", err)
		}
	}
	if err := os.Mkdir(newRoot+"/proc", 0o555); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, step("make /proc", err)
	}
	// Parents before children, as planned. A bind made read-only with the others never
	// lies inside one bound after them: that one is writable or inside a writable one, and
	// so would the bind be.
	var together []bindPlan
	for _, b := range binds {
		if b.together {
			if err := bindStep(b, false); err != nil {
				return nil, err
			}
			together = append(together, b)
		}
	}
	if err := setReadOnly(together); err != nil {
		return nil, err
	}
	for _, b := range binds {
		if !b.together {
			if err := bindStep(b, true); err != nil {
				return nil, err
			}
		}
	}
	if err := bindDev(); err != nil {
		return nil, err
	}
	// A fresh /proc shows only this PID namespace. It must be mounted while the host's
	// /proc is still attached: the kernel lets a user namespace mount proc only where a
	// full one is already visible.
	//
	// It is read-only, as Landlock would make it, but whatever Landlock says: /proc/sys,
	// /proc/sysrq-trigger, /proc/irq and the like are the host's own, and many of their
	// files check only that the writer is uid 0, which a root caller's sandbox is. With
	// kernel.core_pattern set to a program in a session folder, the host runs it as root.
	// The whole mount rather than a list of those parts: the list changes with the kernel,
	// and each part would be a mount of its own. What a command writes through
	// /proc/self/fd (and /dev/stdout) is not on this mount and is unaffected.
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, step("mount /proc", err)
	}
	if err := unix.Chdir(newRoot); err != nil {
		return nil, step("enter the sandbox's root", err)
	}
	// pivot_root(".", ".") stacks the staging root on top of the new one; detaching it takes
	// the host's root, which hangs below it, out of reach.
	if err := unix.PivotRoot(".", "."); err != nil {
		return nil, step("pivot_root into the sandbox's root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return nil, step("detach the host's root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, step("enter /", err)
	}
	return binds, nil
}

// hideHome makes the person's home, where it is a folder of the root tmpfs (a session or
// toolchain folder lies inside it), one that can be passed through but not listed: its
// entries are only the mount points of what is inside the wall, but their names are the
// person's, and the wall check proves that the home cannot be listed. Listing is otherwise
// allowed everywhere in the sandbox's root (see applyLandlock), whose every folder is
// either on the way to something bound or bound itself. The mode holds because no process
// inside has a capability (dropCapabilities) and the root tmpfs is read-only before the
// runner starts (setReadOnly): none can read past it or change it.
func hideHome(home string) error {
	if home == "" || home == "/" {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(newRoot+home, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // nothing inside the wall lies in it
		}
		return step("look at the home folder's place "+home, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	if err := unix.Chmod(newRoot+home, 0o111); err != nil {
		return step("make the home folder's place "+home+" unlistable", err)
	}
	return nil
}

// readOnlyAttr is what every read-only bind gets: no writes, no set-user-ID, no devices.
const readOnlyAttr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

// bindPlan is a mount step whose source is there to bind.
type bindPlan struct {
	mountStep
	dst string
	// srcFD is the source, opened once and checked (see openNoLinks); -1 once closed.
	srcFD int
	dir   bool
	// together says the bind is made read-only with the root tmpfs by setReadOnly: it is
	// read-only and lies in no writable folder.
	together bool
	// placed says its mount point is on the root tmpfs, made by prepareBinds; one inside
	// another bind is looked for (or made) in that folder when it is bound.
	placed bool
}

// emptySources are what an Empty step binds: an empty file and an empty folder on the
// staging root, made only when a step needs them.
type emptySources struct{ file, dir int }

func (e *emptySources) open() error {
	if e.file >= 0 {
		return nil
	}
	if err := unix.Mknod("/empty", unix.S_IFREG|0o444, 0); err != nil {
		return err
	}
	if err := unix.Mkdir("/empty.d", 0o555); err != nil {
		return err
	}
	var err error
	if e.file, err = unix.Open("/empty", unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
		return err
	}
	e.dir, err = unix.Open("/empty.d", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	return err
}

// closeSources closes every source the plans and empty hold: none may reach the runner, and
// the served runner lives in this process.
func closeSources(plans []bindPlan, empty *emptySources) {
	for i := range plans {
		if plans[i].srcFD >= 0 && !plans[i].Empty {
			unix.Close(plans[i].srcFD)
		}
		plans[i].srcFD = -1
	}
	for _, fd := range []*int{&empty.file, &empty.dir} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// prepareBinds opens and checks each step's source and makes on the root tmpfs what the
// steps need there: the mount points of the binds that land on it, and the system paths that
// are symlinks (/bin -> usr/bin), recreated as the same symlink. A bind inside another bind
// has its mount point in the folder it lands in, where bindStep finds (or makes) it. The
// plans hold open descriptors even when it fails; closeSources closes them.
func prepareBinds(steps []mountStep, empty *emptySources) ([]bindPlan, error) {
	var plans []bindPlan
	var writable []string
	for _, m := range steps {
		src, dst := oldRoot+m.Src, newRoot+m.Dst
		fd, isDir := -1, false
		var err error
		switch {
		case m.Empty:
			// What it covers is the host's file at the same place, seen through a folder
			// bound here; one that is gone since has nothing left to hide.
			var cover int
			if cover, err = openNoLinks(oldRoot + m.Dst); errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return plans, step("hide "+m.Dst, err)
			}
			isDir, err = checkSource(cover, m)
			unix.Close(cover)
			if err == nil {
				err = empty.open()
			}
			if err != nil {
				return plans, step("hide "+m.Dst, err)
			}
			fd = empty.file
			if isDir {
				fd = empty.dir
			}
		case m.System:
			// The system's own paths lie where no session may write (the policy refuses
			// them as writable folders), so where their links lead is the system's choice.
			fi, err := os.Lstat(src)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue // a system path this distribution does not have
				}
				return plans, step("find "+m.Src, err)
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				if err := systemLink(m, src, dst); err != nil {
					return plans, err
				}
				continue
			}
			if fd, err = unix.Open(src, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
				return plans, step("find "+m.Src, err)
			}
			isDir = fi.IsDir()
		default:
			// Policy paths are resolved: a symlink on the way appeared since, and following
			// it could bind something else than what the policy checked.
			if fd, err = openNoLinks(src); err != nil {
				if errors.Is(err, unix.ENOENT) {
					return plans, step("find "+m.Src, err)
				}
				return plans, step("bind "+m.Src, err)
			}
			if isDir, err = checkSource(fd, m); err != nil {
				unix.Close(fd)
				return plans, step("bind "+m.Src, err)
			}
		}
		placed := !m.Empty && !slices.ContainsFunc(plans, func(o bindPlan) bool { return o.Dst != m.Dst && policy.Within(o.Dst, m.Dst) })
		inWritable := slices.ContainsFunc(writable, func(w string) bool { return policy.Within(w, m.Dst) })
		if m.Writable {
			writable = append(writable, m.Dst)
		}
		plans = append(plans, bindPlan{mountStep: m, dst: dst, srcFD: fd, dir: isDir, together: !m.Writable && !inWritable, placed: placed})
		if placed {
			if err := mountPoint(dst, isDir); err != nil {
				return plans, step("make the mount point "+m.Dst, err)
			}
		}
	}
	return plans, nil
}

// systemLink recreates a system path that is a symlink as the same symlink.
func systemLink(m mountStep, src, dst string) error {
	target, err := os.Readlink(src)
	if err != nil {
		return step("read the symlink "+m.Src, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return step("make the folder of "+m.Dst, err)
	}
	if err := os.Symlink(target, dst); err != nil && !errors.Is(err, os.ErrExist) {
		return step("link "+m.Dst, err)
	}
	return nil
}

// bindStep binds one planned step, with its own attributes when withAttr is set. A mount
// point inside another bind lies in a folder a command may have changed: it is reached
// without following links, and the bind lands on what was reached.
func bindStep(b bindPlan, withAttr bool) error {
	dst := -1
	if !b.placed {
		fd, err := openBeneath("/", strings.TrimPrefix(b.dst, "/"), !b.Empty, b.dir)
		if err != nil {
			return step("make the mount point "+b.Dst, err)
		}
		defer unix.Close(fd)
		dst = fd
	}
	attr, how := uint64(unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV), "read-write"
	if !b.Writable {
		attr, how = readOnlyAttr, "read-only"
	}
	if !withAttr {
		attr = 0
	}
	if err := bindFrom(b.srcFD, dst, b.dst, attr); err != nil {
		if b.Empty {
			return step("hide "+b.Dst, err)
		}
		return step(fmt.Sprintf("bind %s %s at %s", b.Src, how, b.Dst), err)
	}
	return nil
}

// setReadOnly makes the root tmpfs and every bind on it so far read-only (binds is those
// binds), all at once; without mount_setattr, one at a time.
func setReadOnly(binds []bindPlan) error {
	err := setMountAttr(newRoot, readOnlyAttr, true)
	if !errors.Is(err, unix.ENOSYS) {
		return step("make the root and the read-only binds read-only", err)
	}
	for _, b := range binds {
		if err := remountBind(fdPath(b.srcFD), b.dst, readOnlyAttr); err != nil {
			return step(fmt.Sprintf("bind %s read-only at %s", b.Src, b.Dst), err)
		}
	}
	if err := remount(newRoot, readOnlyAttr); err != nil {
		return step("make the sandbox's root read-only", err)
	}
	return nil
}

// mountPoint makes an empty folder or file at path to mount on, if there is nothing yet.
// It makes it first and looks afterwards: most mount points are new, and a folder that
// exists (even on a read-only mount) only answers EEXIST.
func mountPoint(path string, dir bool) error {
	create := func() error {
		if dir {
			return unix.Mkdir(path, 0o755)
		}
		// One mknod, where opening and closing a file takes Go's runtime six calls.
		return unix.Mknod(path, unix.S_IFREG|0o444, 0)
	}
	err := create()
	if errors.Is(err, unix.ENOENT) {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = create()
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

// bind mounts src at dst with its submounts, then sets attr on all of them: a plain
// read-only remount would leave submounts writable.
func bind(src, dst string, attr uint64) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	err := setMountAttr(dst, attr, true)
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	return remountBind(src, dst, attr)
}

// remountBind is the attributes of bind for a kernel before 5.12, which has no
// mount_setattr: the bind at dst is made again without submounts, so that the one remount
// covers everything that is visible.
func remountBind(src, dst string, attr uint64) error {
	if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return remount(dst, attr)
}

func setMountAttr(path string, attr uint64, recursive bool) error {
	flags := uint(unix.AT_SYMLINK_NOFOLLOW)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, flags, &unix.MountAttr{Attr_set: attr})
}

// remount is setMountAttr for kernels without mount_setattr. A remount inside a user
// namespace must keep the flags the host locked on the original mount, or it is refused.
func remount(path string, attr uint64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT)
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	for _, f := range []struct{ attr, ms uint64 }{
		{unix.MOUNT_ATTR_RDONLY, unix.MS_RDONLY}, {unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID},
		{unix.MOUNT_ATTR_NODEV, unix.MS_NODEV}, {unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC},
	} {
		if attr&f.attr != 0 {
			flags |= uintptr(f.ms)
		}
	}
	return unix.Mount("", path, "", flags, "")
}

// devices are the only device files inside: no terminals, nothing that reaches hardware.
var devices = []string{"null", "zero", "full", "random", "urandom"}

// prepareDev makes /dev on the root tmpfs: the devices' mount points, and the links to
// /proc/self/fd.
func prepareDev() error {
	dev := newRoot + "/dev"
	if err := os.Mkdir(dev, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return step("make /dev", err)
	}
	for _, d := range devices {
		if err := mountPoint(dev+"/"+d, false); err != nil {
			return step("make /dev/"+d, err)
		}
	}
	if err := os.Mkdir(dev+"/shm", 0o755); err != nil {
		return step("make /dev/shm", err)
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return step("link /dev/"+name, err)
		}
	}
	return nil
}

// bindDev binds the devices on their mount points: no set-user-ID, nothing executable; and
// mounts the sandbox's own /dev/shm.
func bindDev() error {
	for _, d := range devices {
		if err := bind(oldRoot+"/dev/"+d, newRoot+"/dev/"+d, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return step("bind /dev/"+d, err)
		}
	}
	// POSIX shared memory and semaphores (Python's multiprocessing, Chromium, PostgreSQL)
	// live in /dev/shm. Each sandbox gets its own, never the host's, which other programs'
	// segments are in: a tmpfs bounded as a container runtime's is, which its pages count
	// against the memory of whoever writes them.
	if err := unix.Mount("tmpfs", newRoot+"/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, shmOptions); err != nil {
		return step("mount the sandbox's /dev/shm", err)
	}
	return nil
}

// shmOptions bound the sandbox's /dev/shm as Docker's default does, with a cap on files.
const shmOptions = "mode=1777,size=64m,nr_inodes=16384"

// Securebits (wallSecurebits). Not in x/sys.
const (
	secbitNoroot              = 1 << 0
	secbitNorootLocked        = 1 << 1
	secbitNoSetuidFixup       = 1 << 2
	secbitNoSetuidFixupLocked = 1 << 3
	secbitKeepCapsLocked      = 1 << 5
	secbitNoCapAmbientRaise   = 1 << 6
	secbitNoCapAmbientLocked  = 1 << 7
)

// dropCapabilities leaves every thread of this process (and so the runner forked from this
// one) with no capabilities in any set, unable to gain them by executing anything. Without
// this a runner could remount its read-only folders writable: it would hold CAP_SYS_ADMIN
// over the sandbox's own mount namespace. Capabilities, securebits and the bounding set
// belong to each thread, and the other threads hold what a builder without a user
// namespace of its own holds: the host's capabilities.
func dropCapabilities() error {
	// A builder is born with the securebits and an empty bounding set (startRootBuilder,
	// emptyBoundingSet); what is not so yet is made on all threads at once, a round of
	// signals each. The threads are as this one, which the runtime cloned them from, unless
	// emptyBoundingSet changed this one alone; then all of it is made everywhere.
	if bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0); threadsDiffer || err != nil || bits != wallSecurebits {
		if err := allThreadsPrctl(unix.PR_SET_SECUREBITS, wallSecurebits); err != nil {
			return fmt.Errorf("securebits: %w", err)
		}
	}
	for c, last := 0, lastCap(); c <= last; c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); !threadsDiffer && err == nil && in == 0 {
			continue
		}
		if err := allThreadsPrctl(unix.PR_CAPBSET_DROP, uintptr(c)); err != nil {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	// The other threads' ambient sets empty with their permitted ones, below.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, errno := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("capset on every thread: %w", errno)
	}
	return nil
}

// allThreadsPrctl is prctl(option, arg, 0, 0, 0) on every thread of this process.
func allThreadsPrctl(option int, arg uintptr) error {
	if _, _, errno := psx.Syscall6(unix.SYS_PRCTL, uintptr(option), arg, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

func startRunner(r runnerSetup, connFD int) (int, error) {
	null, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	// The runner's stdout goes where its stderr goes: it speaks to the core over fd 3, and
	// anything it prints is diagnostics.
	files := []*os.File{null, os.Stderr, os.Stderr}
	if connFD >= 0 {
		conn := os.NewFile(uintptr(connFD), "runner-conn")
		defer conn.Close()
		files = append(files, conn)
	}
	p, err := os.StartProcess(r.Path, append([]string{r.Path}, r.Args...), &os.ProcAttr{
		Dir:   r.Dir,
		Env:   r.Env,
		Files: files,
		// A session of its own: no controlling terminal to push input into.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 0, err
	}
	pid := p.Pid
	p.Release()
	return pid, nil
}

// reap waits for every child, as init must, and returns the runner's exit code once it
// exits. Orphans that the runner leaves behind are killed by the kernel when PID 1 exits.
func reap(runner int) int {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 1
		}
		if pid != runner {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}
