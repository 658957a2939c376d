package linux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// builderCaps are the capabilities (inside the sandbox's user namespace only) the wall
// builder needs, kept across its exec as ambient capabilities so that an ordinary user's
// builder has them too. It drops them all before the runner starts.
var builderCaps = []uintptr{
	unix.CAP_SYS_ADMIN,        // mounts, pivot_root, host name
	unix.CAP_SETPCAP,          // securebits and the bounding set
	unix.CAP_NET_ADMIN,        // lo up
	unix.CAP_NET_BIND_SERVICE, // a proxy port below 1024
	unix.CAP_SYS_RESOURCE,     // no nested user namespaces
}

// Start builds the wall described by p in new namespaces and starts spec behind it. It
// returns once the runner is running; any step that fails refuses the session with the step
// and the reason, and leaves nothing running.
func (pv *Provider) Start(ctx context.Context, p *policy.Policy, spec sandbox.RunnerSpec) (_ sandbox.Process, err error) {
	setup, err := planWall(p, spec)
	if err != nil {
		return nil, err
	}
	setup.Stderr = spec.Stderr != nil
	setup.UserNS = ownUserNS()
	setup.Relay = relayWanted(p.Network)
	b, err := pv.builder(netKind{netnsFor(p.Network), setup.Relay})
	if err != nil {
		return nil, err
	}
	if setup.Relay {
		defer func() {
			if err != nil {
				forgetRelayWorks()
			}
		}()
	}
	// With a network of its own, the builder keeps the setup socket to make sockets there
	// (see publish_linux.go); the process keeps its end once the runner runs.
	setup.Sockets = netnsFor(p.Network)
	keepSetup := false
	defer func() {
		if !keepSetup {
			b.setup.Close()
		}
	}()
	defer b.closeNetNS() // the builder has its own once the setup is sent
	setup.NetNS = b.netns != nil
	if b.net.ready {
		setup.NetReady, setup.RelayErr = true, b.net.relayErr
	}
	setup.TimerSlack = b.slack
	// The limits are in place before the setup goes: until it comes the builder starts
	// nothing.
	limits, err := b.proc.cg.apply(spec.Limits, memTotal())
	if err != nil {
		b.discard()
		return nil, err
	}
	tmpWord, tmpMount, err := pv.tmpFor(p.PrivateTmp)
	if err != nil {
		b.discard()
		return nil, err
	}
	if tmpMount != nil {
		defer tmpMount.Close()
		setup.TmpMount = true
	}
	if tmpWord != "" {
		limits = append(limits, tmpWord)
	}
	payload := setup.encode()
	// The runner's socket and the error output travel with the setup: a builder started
	// ahead of the session had neither yet. So does the network namespace made after the
	// builder started, and the private tmp's own mount.
	var files []int
	if spec.Conn != nil {
		files = append(files, int(spec.Conn.Fd()))
	}
	if spec.Stderr != nil {
		files = append(files, int(spec.Stderr.Fd()))
	}
	if b.netns != nil {
		files = append(files, int(b.netns.Fd()))
	}
	if tmpMount != nil {
		files = append(files, int(tmpMount.Fd()))
	}
	var rights []byte
	if len(files) > 0 {
		rights = unix.UnixRights(files...)
	}
	_, _, err = b.setup.WriteMsgUnix(payload, rights, nil)
	// The descriptors were duplicated into the message (or not sent at all); either way
	// the caller's files stay theirs, and in use until here.
	runtime.KeepAlive(spec.Conn)
	runtime.KeepAlive(spec.Stderr)
	runtime.KeepAlive(b.netns)
	runtime.KeepAlive(tmpMount)
	if err != nil {
		b.discard()
		return nil, fmt.Errorf("linux sandbox: send the wall's setup (%d bytes): %w", len(payload), err)
	}
	stop := context.AfterFunc(ctx, func() { b.setup.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := b.proc.handshake(b.setup); err != nil {
		b.discard()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("linux sandbox: building the wall: %w", ctx.Err())
		}
		return nil, err
	}
	if err := b.takeNet(); err != nil {
		b.discard()
		return nil, err
	}
	if why := noRelay(p.Network); why != "" {
		b.proc.active = append(b.proc.active, why)
	}
	b.proc.active = append(b.proc.active, limits...)
	b.proc.limits = limits
	b.proc.holdMounts()
	if p.Network == policy.Allowlist {
		b.proc.holdNetNS(b)
	}
	if setup.Sockets {
		b.setup.SetDeadline(time.Time{})
		b.proc.sockets, b.proc.ownNet, keepSetup = b.setup, true, true
	}
	return b.proc, nil
}

// Prepare starts a wall builder for a session of the given network mode, so that the
// namespaces are made and the builder starts up while the caller makes the private tmp, the
// proxy and the policy; the next Start with a matching mode takes it. It returns at once:
// the launch runs on its own goroutine and Start waits for it. The builder knows nothing of
// the session until Start sends the setup; until then it only waits. A failure here is not
// reported: Start then starts a builder itself and says what failed. A prepared builder no
// Start takes ends with this process.
func (pv *Provider) Prepare(network policy.Network) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if pv.spare != nil {
		return
	}
	sp := &spare{ready: make(chan struct{})}
	pv.spare = sp
	go func() {
		// Whether the relay is wanted may take a probe the first time (relaySupport): it is
		// found out here, off the caller's way.
		sp.kind = netKind{netnsFor(network), relayWanted(network)}
		sp.b, sp.err = launch(sp.kind, pv.cgroupHost())
		close(sp.ready)
	}()
}

// spare is a builder started by Prepare; kind, b and err are set once ready is closed.
type spare struct {
	kind  netKind
	ready chan struct{}
	b     *builder
	err   error
}

// netKind is the network a builder is started for: a namespace of its own (netns), and in
// it the relay's rules, listener and DNS stub (relay).
type netKind struct{ netns, relay bool }

// builder is a started wall builder waiting for its setup.
type builder struct {
	proc  *process
	setup *net.UnixConn
	// netns is the network namespace the builder joins, made after it started; nil when it
	// was started in one, or needs none. net is what was set up in it (see newNetNS).
	netns *os.File
	net   madeNetNS
	// slack is the timer slack the builder's main thread takes back (startCoarse).
	slack uint64
}

// discard ends a builder and everything it started.
func (b *builder) discard() {
	b.setup.Close()
	b.closeNetNS()
	b.proc.Kill()
	b.proc.Wait()
}

func (b *builder) closeNetNS() {
	if b.netns != nil {
		b.netns.Close()
		b.netns = nil
	}
	b.net.closeRelay()
}

// takeNet hands the relay's listener and the DNS stub's socket made with the network
// namespace (newNetNS) to the process, which serves them as the ones a builder sends.
func (b *builder) takeNet() error {
	if b.net.relay == nil {
		return nil
	}
	l, err := net.FileListener(b.net.relay)
	if err != nil {
		return fmt.Errorf("linux sandbox: the relay's sockets: %w", err)
	}
	pc, err := net.FilePacketConn(b.net.stub)
	if err != nil {
		l.Close()
		return fmt.Errorf("linux sandbox: the relay's sockets: %w", err)
	}
	b.net.closeRelay()
	b.proc.mu.Lock()
	b.proc.relay, b.proc.stub = l, pc
	b.proc.mu.Unlock()
	return nil
}

// builder takes the prepared builder when it has the right network, or starts one.
func (pv *Provider) builder(kind netKind) (*builder, error) {
	pv.mu.Lock()
	sp := pv.spare
	pv.spare = nil
	pv.mu.Unlock()
	if sp != nil {
		<-sp.ready
		if sp.err == nil {
			if sp.kind == kind {
				return sp.b, nil
			}
			sp.b.discard()
		}
	}
	return launch(kind, pv.cgroupHost())
}

// cgroupHost is where the sandboxes' cgroups are made: the machine's, unless a test said.
func (pv *Provider) cgroupHost() *cgroupHost {
	if pv.cgroups != nil {
		return pv.cgroups
	}
	return hostCgroups()
}

// ownUserNS says whether the wall builder needs a user namespace of its own to hold the
// capabilities it builds the wall with. An ordinary user's does; a process that runs as root
// with them (as on a server, in CI or in a container) has them already, and its builder
// makes the other namespaces directly, as bwrap does for root. That is about a millisecond
// less per session: Go starts a child in a new user namespace by copying this process's
// memory, not with vfork. What the user namespace did besides, the wall does in both
// cases: the seccomp filter refuses nested user namespaces, and every thread of the
// builder drops its capabilities. Where there is no filter for the architecture, every
// builder gets a user namespace.
var ownUserNS = sync.OnceValue(func() bool {
	if os.Geteuid() != 0 || seccompArch == 0 {
		return true
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true
	}
	for _, c := range rootCaps {
		if data[c/32].Effective&(1<<(c%32)) == 0 {
			return true
		}
	}
	return false
})

// rootCaps are the capabilities a builder without a user namespace must inherit from a root
// caller: it builds the wall with them, then drops them.
var rootCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE}

// launch creates the namespaces and starts the wall builder in them, with the setup socket as
// its fd 3.
func launch(kind netKind, cgroups *cgroupHost) (*builder, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("linux sandbox: make the setup socket: %w", err)
	}
	wallEnd := os.NewFile(uintptr(fds[1]), "wall-setup")
	defer wallEnd.Close()
	hostFile := os.NewFile(uintptr(fds[0]), "host-setup")
	c, err := net.FileConn(hostFile)
	hostFile.Close()
	if err != nil {
		return nil, fmt.Errorf("linux sandbox: open the setup socket: %w", err)
	}
	conn := c.(*net.UnixConn)
	cg, err := newCgroup(cgroups)
	if err != nil {
		conn.Close()
		return nil, err
	}

	flags := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	userns := ownUserNS()
	// A new network namespace takes the kernel most of a millisecond to make, and the
	// relay's rules a few more. A builder with a user namespace of its own must be started
	// in it and set it up itself (only that user namespace's capabilities reach it); a root
	// caller's builder starts without, and the namespace is made and set up while it boots
	// (a Go program's start, on another core) and sent to it with the setup.
	joinNetNS := kind.netns && !userns
	var netnsMade <-chan madeNetNS
	if joinNetNS {
		netnsMade = newNetNS(kind.relay)
	} else if kind.netns {
		flags |= unix.CLONE_NEWNET
	}
	attr := &syscall.SysProcAttr{
		Cloneflags: flags,
		// If the core dies, so does the sandbox, and with its PID 1 everything in it.
		Pdeathsig: syscall.SIGKILL,
		Setsid:    true,
	}
	if userns {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		attr.AmbientCaps = builderCaps
	}
	cg.cloneInto(&attr.UseCgroupFD, &attr.CgroupFD)
	cmd := &exec.Cmd{
		Path: builderBinary(),
		Args: []string{wallArg0},
		// The builder is PID 1 for the sandbox's whole life; one P keeps it to few threads.
		// A race-detector build would otherwise sleep a second before every clean exit.
		Env:         []string{"GOMAXPROCS=1", "GORACE=atexit_sleep_ms=0"},
		ExtraFiles:  []*os.File{wallEnd},
		SysProcAttr: attr,
	}
	slack, born, err := startBuilder(cmd, cg.v1Dirs)
	if err != nil {
		conn.Close()
		cg.remove()
		if netnsMade != nil {
			m := <-netnsMade
			if m.f != nil {
				m.f.Close()
			}
			m.closeRelay()
		}
		if !userns {
			return nil, fmt.Errorf("linux sandbox: create the namespaces: %w; the session cannot run behind the wall", err)
		}
		return nil, fmt.Errorf("linux sandbox: create the namespaces: %w; the kernel refused new user namespaces "+
			"(check sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone and AppArmor's "+
			"kernel.apparmor_restrict_unprivileged_userns), so the session cannot run behind the wall", err)
	}
	proc := &process{cmd: cmd, cg: cg, done: make(chan struct{})}
	go proc.wait()
	b := &builder{proc: proc, setup: conn, slack: slack}
	if !born {
		if err := cg.place(cmd.Process.Pid); err != nil {
			b.discard()
			return nil, err
		}
	}
	if netnsMade != nil {
		m := <-netnsMade
		if m.err != nil {
			b.discard()
			return nil, fmt.Errorf("linux sandbox: create the network namespace: %w; the session cannot run behind the wall", m.err)
		}
		b.netns, b.net = m.f, m
	}
	return b, nil
}

// madeNetNS is a network namespace, open, or why it could not be made; and what was set up
// in it.
type madeNetNS struct {
	f   *os.File
	err error
	// ready says lo is up and, when the relay was asked for, the relay's rules, listener
	// and stub were made (relay and stub) or relayErr says why not; the builder then does
	// neither. Without ready the builder sets the network up itself, as in its own.
	ready       bool
	relay, stub *os.File
	relayErr    string
}

func (m *madeNetNS) closeRelay() {
	for _, f := range []**os.File{&m.relay, &m.stub} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// setUp sets the network the calling thread is in up as the builder would (wall_linux.go):
// lo up and, with relay, the relay's rules, listener and stub (or relayErr says why not).
// It returns why lo did not come up, which leaves the rest to the builder, which tries and
// says why. The relay's probe (probeHere, relayProbe) tries the same steps.
func (m *madeNetNS) setUp(relay bool) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	m.ready = true
	if !relay {
		return nil
	}
	r, st, err := egressUp()
	if err != nil {
		m.relayErr = err.Error()
		return nil
	}
	m.relay, m.stub = os.NewFile(uintptr(r), "relay"), os.NewFile(uintptr(st), "stub")
	return nil
}

// newNetNS makes a network namespace, on a goroutine of its own, and sends it open; with
// relay, set up for the relay (egressUp). The thread that makes it enters it and comes back
// to this process's own before any other goroutine may run on it. It must not end instead: a
// child's death signal (Pdeathsig) follows the thread that started the child, which may be
// this one.
func newNetNS(relay bool) <-chan madeNetNS {
	ch := make(chan madeNetNS, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- madeNetNS{err: err}
			return
		}
		defer own.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- madeNetNS{err: err}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		m := madeNetNS{f: f, err: err}
		if err == nil {
			_ = m.setUp(relay) // the builder says why lo did not come up
		}
		if back := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); back != nil {
			// The thread cannot go back: it stays locked and parked for good, so that no
			// goroutine ever runs in the wrong network and no child loses its parent.
			if f != nil {
				f.Close()
			}
			m.closeRelay()
			ch <- madeNetNS{err: fmt.Errorf("return to this process's network namespace: %w", back)}
			select {}
		}
		runtime.UnlockOSThread()
		ch <- m
	}()
	return ch
}

// handshake reads the builder's reports until the runner has started.
func (pr *process) handshake(conn *net.UnixConn) error {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, err := recvSeqpacket(func() (int, int, error) {
			n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
			return n, oobn, err
		})
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return err
			}
			// The builder closed its end before the runner started: it is ending. One that
			// lives on regardless is ended rather than waited for without end.
			select {
			case <-pr.done:
			case <-time.After(2 * time.Second):
				pr.Kill()
				<-pr.done
				return fmt.Errorf("linux sandbox: the wall builder hung up before the runner started (%v) "+
					"but did not end, and was ended; the session is refused", err)
			}
			return fmt.Errorf("linux sandbox: the wall builder ended before the runner started (%v); "+
				"the session is refused; its error output went to the runner's stderr "+
				"(a binary that starts sandboxes must call linux.MaybeRunInit first in main)", pr.waitErr)
		}
		r, err := decodeReport(buf[:n])
		if err != nil {
			return fmt.Errorf("linux sandbox: unreadable report from the wall builder: %w", err)
		}
		if r.Relay || r.Stub {
			if err := pr.takeRelay(r, oob[:oobn]); err != nil {
				return err
			}
			continue
		}
		if r.Forward != 0 {
			if err := pr.takeForward(r, oob[:oobn]); err != nil {
				return err
			}
			continue
		}
		if oobn > 0 {
			if err := pr.takeListener(oob[:oobn]); err != nil {
				return err
			}
		}
		switch {
		case r.Error != "":
			return fmt.Errorf("linux sandbox: the wall could not be built: %s: %s; the session is refused and nothing was started", r.Step, r.Error)
		case r.Listener && pr.ln == nil:
			return errors.New("linux sandbox: the wall builder announced the proxy listener but sent no socket")
		case r.Started:
			pr.active = r.Active
			return nil
		}
	}
}

// recvSeqpacket reads one message, with read, from a SOCK_SEQPACKET socket whose peer
// closes it right after its last message, as the builder does after its last report. Linux
// can report that close before the message: a read that finds the queue empty looks for the
// close only then, and both may come in between. Once the close is seen, all the peer sent
// before it is queued, so one more read tells the two apart. A close with nothing before
// it is io.EOF.
func recvSeqpacket(read func() (n, oobn int, err error)) (int, int, error) {
	n, oobn, err := read()
	if err == nil && n == 0 {
		n, oobn, err = read()
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	return n, oobn, err
}

// takeForward keeps the listener of a forwarded port, or why the builder could not make it.
func (pr *process) takeForward(r *wallReport, oob []byte) error {
	if pr.forwards == nil {
		pr.forwards, pr.forwardErrs = map[int]net.Listener{}, map[int]string{}
	}
	f, err := sentFile(oob, "forward-listener", pr.forwards[r.Forward] != nil)
	if err == nil && f != nil {
		var ln net.Listener
		ln, err = net.FileListener(f)
		f.Close()
		if err == nil {
			pr.forwards[r.Forward] = ln
		}
	}
	if err != nil {
		return fmt.Errorf("linux sandbox: the forward of port %d: %w", r.Forward, err)
	}
	if pr.forwards[r.Forward] == nil {
		why := r.Error
		if why == "" {
			why = "the wall builder sent no socket"
		}
		pr.forwardErrs[r.Forward] = why
	}
	return nil
}

func rightsIn(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	return fds, nil
}

func (pr *process) takeListener(oob []byte) error {
	f, err := sentFile(oob, "proxy-listener", pr.ln != nil) // only one listener is ever sent
	if err == nil && f != nil {
		pr.ln, err = net.FileListener(f)
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("linux sandbox: the proxy listener: %w", err)
	}
	return nil
}

// sentFile is the descriptor a report's message carries, as a file, for a caller that has
// none of its kind yet (taken false). Every other descriptor the message carries, and this
// one when taken, is closed: a report sends one, and one of a kind.
func sentFile(oob []byte, name string, taken bool) (*os.File, error) {
	fds, err := rightsIn(oob)
	if err != nil {
		return nil, err
	}
	var f *os.File
	for i, fd := range fds {
		unix.CloseOnExec(fd)
		if i > 0 || taken {
			unix.Close(fd)
			continue
		}
		f = os.NewFile(uintptr(fd), name)
	}
	return f, nil
}

// process is a runner behind the wall; its PID 1 is the wall builder.
type process struct {
	cmd     *exec.Cmd
	ln      net.Listener
	active  []string
	limits  []string // the part of active that says what the limits are
	cg      *cgroup  // removed once the sandbox is empty, before done is closed
	done    chan struct{}
	waitErr error
	once    sync.Once
	// forwards are the forwarded ports' listeners inside, until ForwardListeners hands
	// them over; forwardErrs say why a port has none.
	forwards    map[int]net.Listener
	forwardErrs map[int]string
	// relay and stub are the relay's listener and the DNS stub's socket inside, until
	// RelayListeners hands them over (netns_linux.go).
	relay net.Listener
	stub  net.PacketConn

	// sockets is the setup socket, kept to ask the builder for sockets in the sandbox's
	// network (publish_linux.go); nil when it has none. sockMu: one ask at a time.
	sockMu  sync.Mutex
	sockets *net.UnixConn
	ownNet  bool // the sandbox has a network of its own (and asked sockets come from it)

	mu     sync.Mutex
	mntns  *os.File // the sandbox's mount namespace, held from the host; see holdMounts
	netns  *os.File // its network namespace, for forwards made later; see ForwardListen
	exited bool
	netdir string // see netDir
}

func (pr *process) wait() {
	pr.waitErr = pr.cmd.Wait()
	// PID 1 is reaped, so the kernel has ended every other process of the sandbox.
	pr.cg.remove()
	pr.mu.Lock()
	pr.exited = true
	ns := pr.mntns
	pr.mntns = nil
	if pr.netns != nil {
		pr.netns.Close()
		pr.netns = nil
	}
	pr.mu.Unlock()
	close(pr.done)
	if ns != nil {
		// The last reference: the kernel unmounts the wall now, while the caller, no
		// longer waiting, removes the private tmp.
		ns.Close()
	}
}

// holdMounts keeps the sandbox's mount namespace open from the host. Unmounting the wall's
// mounts makes the kernel wait for every CPU; without this it happens inside the exit of the
// sandbox's PID 1, which Wait, and so the end of every session and every run, waits for.
// With it, it happens once the sandbox is empty, alongside what the caller does next.
func (pr *process) holdMounts() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.exited {
		return
	}
	if f, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", pr.cmd.Process.Pid)); err == nil {
		pr.mntns = f
	}
}

// holdNetNS keeps the sandbox's network namespace open from the host, for forwards made
// after the wall (ForwardListen): the one made for the builder when the caller made it, or
// the builder's own.
func (pr *process) holdNetNS(b *builder) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.exited {
		return
	}
	if b.netns != nil {
		pr.netns, b.netns = b.netns, nil
		return
	}
	if f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pr.cmd.Process.Pid)); err == nil {
		pr.netns = f
	}
}

// ForwardListen makes a forwarded port's listener inside the running sandbox's network, as
// the wall makes the ones it starts with: for a host loopback port allowed after the wall was
// built. A server inside that listens on the port already keeps it: the error is then
// EADDRINUSE, and the caller refuses the forward rather than shadow the server. Entering the
// sandbox's network takes CAP_SYS_ADMIN over it and in the caller's own user namespace, which
// only a root caller has: for an ordinary user's, ForwardListen fails and the port is
// forwarded from the next wall on.
func (pr *process) ForwardListen(port int) (net.Listener, error) {
	pr.mu.Lock()
	var ns *os.File
	if pr.netns != nil && !pr.exited {
		// A duplicate, so that the sandbox's end cannot close it under this call.
		if fd, err := unix.FcntlInt(pr.netns.Fd(), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			ns = os.NewFile(uintptr(fd), "sandbox-netns")
		}
	}
	pr.mu.Unlock()
	if ns == nil {
		return nil, errors.New("the sandbox's network is not held (it ended, or is the host's)")
	}
	defer ns.Close()
	type made struct {
		fd  int
		err error
	}
	ch := make(chan made, 1)
	go func() {
		// As newNetNS: the thread enters the sandbox's network, makes the socket and comes
		// back before anything else may run on it, or stays parked for good.
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- made{-1, err}
			return
		}
		defer own.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- made{-1, fmt.Errorf("enter the sandbox's network: %w", err)}
			return
		}
		fd, err := loopbackListener(port)
		if back := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); back != nil {
			if fd >= 0 {
				unix.Close(fd)
			}
			ch <- made{-1, fmt.Errorf("return to this process's network namespace: %w", back)}
			select {}
		}
		runtime.UnlockOSThread()
		ch <- made{fd, err}
	}()
	m := <-ch
	if m.err != nil {
		return nil, m.err
	}
	f := os.NewFile(uintptr(m.fd), "forward-listener")
	defer f.Close()
	return net.FileListener(f)
}

// Pid is the host's PID of the sandbox's PID 1: the wall builder, which serves the runner
// or is the parent of the program it started.
func (pr *process) Pid() int { return pr.cmd.Process.Pid }

// ProxyListener is the listener on 127.0.0.1:ProxyPort inside the sandbox's network, in
// allowlist mode; nil otherwise. It is closed by Wait.
func (pr *process) ProxyListener() net.Listener { return pr.ln }

var (
	_ sandbox.Abandoner     = (*process)(nil)
	_ sandbox.Forwarder     = (*process)(nil)
	_ sandbox.EgressCounter = (*process)(nil)
	_ sandbox.Publisher     = (*process)(nil)
)

// ForwardListeners hands over the forwarded ports' listeners (once: a second call returns
// none) and says why any port has none.
func (pr *process) ForwardListeners() (map[int]net.Listener, map[int]string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ls, errs := pr.forwards, pr.forwardErrs
	pr.forwards = nil
	return ls, errs
}

// NoRoute counts, from the sandbox's network's own statistics read through its PID 1, the
// packets its programs tried to send where there is no route: every connect or send to an
// address outside the sandbox's lo, which is a program that ignored the proxy (or named an
// address on purpose). The kernel counts them before any packet exists, so the attempts
// sent nothing. It cannot say which program tried, nor where to: only that one did. A
// connection refused on the sandbox's own loopback (nothing listening at that port) is not
// counted: that is an ordinary answer inside.
func (pr *process) NoRoute() (uint64, error) {
	dir := pr.netDir()
	var total uint64
	for _, f := range []struct{ file, key string }{{"snmp", "Ip:"}, {"snmp6", "Ip6OutNoRoutes"}} {
		b, err := os.ReadFile(dir + "/" + f.file)
		if err != nil {
			if f.file == "snmp6" && errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 in this kernel
			}
			return 0, err
		}
		n, err := outNoRoutes(string(b), f.key)
		if err != nil {
			return 0, fmt.Errorf("%s/%s: %w", dir, f.file, err)
		}
		total += n
	}
	return total, nil
}

// RefusedLoopback counts the TCP connections programs inside tried that were refused (the
// kernel's AttemptFails). The sandbox's network holds only lo, and a connection to an
// address outside it never starts (NoRoute counts those): so each is a connection to the
// sandbox's own loopback at a port nothing inside listens on.
func (pr *process) RefusedLoopback() (uint64, error) {
	b, err := os.ReadFile(pr.netDir() + "/snmp")
	if err != nil {
		return 0, err
	}
	return snmpCount(string(b), "Tcp:", "AttemptFails")
}

// snmpCount reads one count from /proc/net/snmp: a line of names after prefix, then a line
// of values after the same prefix.
func snmpCount(text, prefix, name string) (uint64, error) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != prefix || i+1 >= len(lines) {
			continue
		}
		values := strings.Fields(lines[i+1])
		for j, n := range f {
			if n == name && j < len(values) && values[0] == prefix {
				return strconv.ParseUint(values[j], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s %s count", prefix, name)
}

// netDir is the /proc folder of the sandbox's network statistics. A builder started in its
// network namespace (an ordinary user's) is in it on every thread; a root caller's builder
// joined it on the one thread the wall is built on, which need not be its first, whose are
// what /proc/PID/net shows.
func (pr *process) netDir() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.netdir != "" {
		return pr.netdir
	}
	pid := strconv.Itoa(pr.cmd.Process.Pid)
	pr.netdir = "/proc/" + pid + "/net"
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return pr.netdir
	}
	tasks, _ := os.ReadDir("/proc/" + pid + "/task")
	for _, t := range tasks {
		if ns, err := os.Readlink("/proc/" + pid + "/task/" + t.Name() + "/ns/net"); err == nil && ns != own {
			pr.netdir = "/proc/" + pid + "/task/" + t.Name() + "/net"
			break
		}
	}
	return pr.netdir
}

// outNoRoutes reads OutNoRoutes from /proc/net/snmp (a line of names after "Ip:", then a
// line of values) or Ip6OutNoRoutes from /proc/net/snmp6 (name and value on one line).
func outNoRoutes(text, key string) (uint64, error) {
	if key == "Ip:" {
		return snmpCount(text, "Ip:", "OutNoRoutes")
	}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			return strconv.ParseUint(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s count", key)
}

// Abandon is Kill for a caller that will not wait, as `openworker run` once it has its
// command's status: the sandbox's mount namespace is let go first, so that the kernel
// unmounts the wall as part of PID 1's exit, not when the caller, holding the last
// reference, exits. Its cgroups, empty once the kernel has finished that exit, are removed
// by wait when this process still runs then, or else by the next sandbox's start on this
// machine, which removes every empty cgroup whose creator is gone (sweepStale). Waiting
// here for the exit and the removal cost every run about a millisecond after its command
// had ended.
func (pr *process) Abandon() error {
	pr.mu.Lock()
	ns := pr.mntns
	pr.mntns = nil
	pr.mu.Unlock()
	if ns != nil {
		ns.Close()
	}
	return pr.Kill()
}

// Kill ends every process in the sandbox: killing a PID namespace's init makes the kernel
// kill all the others, whatever session or process group they moved to.
func (pr *process) Kill() error {
	err := pr.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Wait waits for the runner to exit and for the sandbox to be empty, then closes the proxy
// listener. The error is the runner's exit status (128+N when a signal N ended it).
func (pr *process) Wait() error {
	<-pr.done
	pr.once.Do(func() {
		if pr.ln != nil {
			pr.ln.Close()
		}
		pr.mu.Lock()
		for _, l := range pr.forwards {
			l.Close() // never handed over
		}
		pr.forwards = nil
		pr.mu.Unlock()
		pr.closeRelay()
		pr.closeSockets()
	})
	return pr.waitErr
}

// Active lists the parts of the wall in force.
func (pr *process) Active() []string { return append([]string(nil), pr.active...) }

var _ sandbox.LimitReporter = (*process)(nil)

// Limits lists the limits in force, and those not and why.
func (pr *process) Limits() []string { return append([]string(nil), pr.limits...) }

// Check builds a wall from a minimal policy (system paths only, allowlist network with a
// listener) and runs `true` behind it.
func (pr *Provider) Check(ctx context.Context) sandbox.Status {
	return pr.CheckWith(ctx, sandbox.Limits{})
}

// CheckWith is Check with the given limits, so that the status says which of a session's
// limits would be in force.
func (pr *Provider) CheckWith(ctx context.Context, limits sandbox.Limits) sandbox.Status {
	st := sandbox.Status{Provider: sandbox.Linux}
	fail := func(reason string) sandbox.Status {
		st.Tier = "not available: " + reason
		st.Reason = reason
		return st
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return fail("no `true` program to test the wall with: " + err.Error())
	}
	tmp := pr.CheckTmp
	if tmp == "" {
		if tmp, err = os.MkdirTemp("", "openworker-check-"); err != nil {
			return fail("cannot make a private tmp folder for the check: " + err.Error())
		}
		defer os.RemoveAll(tmp)
	}
	if tmp, err = policy.Resolve(tmp); err != nil {
		return fail("cannot resolve the check's tmp folder: " + err.Error())
	}
	// The check's private tmp is bounded as a session's is, so that the status says
	// whether that limit holds here.
	if err := pr.BoundTmp(tmp, limits.Tmp); err != nil {
		return fail(err.Error())
	}
	defer pr.ReleaseTmp(tmp)
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/nonexistent"
	}
	if truePath, err = policy.Resolve(truePath); err != nil {
		return fail("cannot resolve `true`: " + err.Error())
	}
	p := &policy.Policy{
		PrivateTmp: tmp,
		Home:       tmp,
		UserHome:   home,
		System:     policy.SystemPaths("linux"),
		// `true` may live outside the usual system paths (a Nix profile, say).
		RunnerFiles: []string{truePath},
		Network:     policy.Allowlist,
		ProxyPort:   3128,
	}
	proc, err := pr.Start(ctx, p, sandbox.RunnerSpec{Path: truePath, Dir: "/", Limits: limits})
	if err != nil {
		return fail(err.Error())
	}
	werr := proc.Wait()
	if proc.ProxyListener() == nil {
		return fail("the wall builder did not hand over the proxy listener")
	}
	if werr != nil {
		return fail("`true` failed behind the wall: " + werr.Error())
	}
	active := proc.Active()
	st.OK = true
	st.Details = active
	var landlockPart string
	for _, a := range active {
		if strings.HasPrefix(a, "landlock") {
			landlockPart = a
		}
	}
	if abi, ok := strings.CutPrefix(landlockPart, "landlock ABI "); ok {
		abi, _, _ = strings.Cut(abi, " ")
		st.Tier = "tier 1 (linux: namespaces+landlock ABI " + abi + ")"
	} else {
		st.Tier = "tier 1 (linux: namespaces; " + landlockPart + ")"
	}
	return st
}
