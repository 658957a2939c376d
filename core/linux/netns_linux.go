package linux

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
)

// The sandbox's network, in allowlist and open mode, sends every TCP connection that does
// not stay on its own loopback to the core's relay, and answers DNS from a stub that gives
// out addresses standing for names (core/dnsstub). The builder sets it up before anything
// inside runs:
//
//   - default routes (IPv4 and IPv6) through lo, so that a connect to any address starts
//     instead of failing for want of a route;
//   - nftables rules in the sandbox's own namespace (table inet openworker): in the NAT
//     output hook, every TCP connection not to loopback is redirected to the relay's
//     listener, whose socket keeps the original destination (SO_ORIGINAL_DST); in the filter
//     output hook, every packet not to loopback (after that redirect) is dropped, so UDP
//     other than to the stub, ICMP and the rest fail at once (EPERM);
//   - the relay's listener at a port of its own on the sandbox's loopback, and the stub's
//     UDP socket at port 53 of it, which /etc/resolv.conf inside names;
//
// and hands both sockets to the core, which serves them: nothing inside ever holds them.
//
// nftables over netlink rather than a TUN device and a TCP stack of our own: the kernel's
// NAT keeps each connection the kernel's, so the relay costs one accept and a splice-free
// copy on loopback (see BenchmarkRelay), and nothing parses packets in the core.

// stubPort is the DNS stub's port on the sandbox's loopback; resolvConf names it.
const stubPort = 53

// resolvConf is the sandbox's /etc/resolv.conf: the stub, and nothing else to try.
const resolvConf = "# OpenWorker: names are answered by the session's own stub; connections go through its allow list.\n" +
	"nameserver 127.0.0.1\noptions edns0\n"

// relayProbeArg0 is the argv[0] of the process relaySupport starts to try the rules in a
// network namespace of its own.
const relayProbeArg0 = "openworker-linux-relay-probe"

// egressTable is the nftables table the rules live in.
const egressTable = "openworker"

// egressUp sets up the sandbox's network for the relay (see above) and returns the relay's
// listener and the stub's socket. It runs on the thread that joined the sandbox's network,
// with CAP_NET_ADMIN and CAP_NET_BIND_SERVICE over it.
func egressUp() (relay, stub int, err error) {
	lo, err := loIndex()
	if err != nil {
		return -1, -1, fmt.Errorf("find lo: %w", err)
	}
	if err := defaultRoute(unix.AF_INET, lo); err != nil {
		return -1, -1, fmt.Errorf("route IPv4 through lo: %w", err)
	}
	// Without IPv6 in the kernel, IPv4 alone.
	if err := defaultRoute(unix.AF_INET6, lo); err != nil && !errors.Is(err, unix.EAFNOSUPPORT) && !errors.Is(err, unix.EOPNOTSUPP) {
		return -1, -1, fmt.Errorf("route IPv6 through lo: %w", err)
	}
	relay, err = loopbackListener(0)
	if err != nil {
		return -1, -1, fmt.Errorf("listen for the relay: %w", err)
	}
	sa, err := unix.Getsockname(relay)
	var port int
	switch a := sa.(type) {
	case *unix.SockaddrInet6:
		port = a.Port
	case *unix.SockaddrInet4:
		port = a.Port
	}
	if err == nil && port == 0 {
		err = errors.New("no port")
	}
	if err == nil {
		err = egressRules(uint16(port))
	}
	if err == nil {
		stub, err = stubSocket()
	}
	if err != nil {
		unix.Close(relay)
		return -1, -1, err
	}
	return relay, stub, nil
}

func loIndex() (uint32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, err
	}
	return ifr.Uint32(), nil
}

// defaultRoute adds a default route of family through lo, from the loopback address.
func defaultRoute(family uint8, lo uint32) error {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	rt := unix.RtMsg{Family: family, Table: unix.RT_TABLE_MAIN, Protocol: unix.RTPROT_BOOT,
		Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_UNICAST}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(unix.RTA_OIF, lo)
	if family == unix.AF_INET {
		ae.Bytes(unix.RTA_PREFSRC, []byte{127, 0, 0, 1})
	}
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	data := append((*[unix.SizeofRtMsg]byte)(unsafe.Pointer(&rt))[:], attrs...)
	_, err = c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_NEWROUTE, Flags: netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl},
		Data:   data,
	})
	return err
}

// egressRules installs the table: redirect TCP out to port, drop everything else out.
func egressRules(port uint16) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: egressTable})
	accept := nftables.ChainPolicyAccept
	nat := c.AddChain(&nftables.Chain{Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest, Policy: &accept})
	filter := c.AddChain(&nftables.Chain{Name: "out", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	for _, ch := range []*nftables.Chain{nat, filter} {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: toLoopback(unix.NFPROTO_IPV4, expr.VerdictReturn)})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: toLoopback(unix.NFPROTO_IPV6, expr.VerdictReturn)})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: filter, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}})
	return c.Flush()
}

// toLoopback matches a packet of the family whose destination is loopback (127.0.0.0/8 or
// ::1) and gives it verdict.
func toLoopback(family byte, verdict expr.VerdictKind) []expr.Any {
	e := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{family}},
	}
	if family == unix.NFPROTO_IPV4 {
		e = append(e,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{127}})
	} else {
		e = append(e,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{15: 1}})
	}
	return append(e, &expr.Verdict{Kind: verdict})
}

// stubSocket is the stub's UDP socket at port 53 of the sandbox's loopback, both addresses.
func stubSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err == nil {
			err = unix.Bind(fd, &unix.SockaddrInet6{Port: stubPort})
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT) {
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return -1, err
		}
		if err = unix.Bind(fd, &unix.SockaddrInet4{Port: stubPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return -1, fmt.Errorf("the DNS stub's socket at port %d: %w", stubPort, err)
	}
	return fd, nil
}

// writeResolvConf puts the sandbox's /etc/resolv.conf on its root tmpfs (the host's is never
// bound: it names servers the sandbox cannot reach), before that is made read-only.
func writeResolvConf(root string) error {
	dir := root + "/etc"
	if _, err := os.Lstat(dir + "/resolv.conf"); err == nil {
		return nil // something was bound there on purpose
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(dir+"/resolv.conf", []byte(resolvConf), 0o444)
}

// relayProbe is the process relaySupport starts in a network namespace of its own: it sets
// the network up as a sandbox's, and says why not on stderr.
func relayProbe() int {
	if why := trySetUp(); why != "" {
		fmt.Fprintln(os.Stderr, why)
		return 1
	}
	return 0
}

// trySetUp sets the network the calling thread is in up as a sandbox's with the relay, lets
// the sockets go, and says why it could not ("" when it could).
func trySetUp() string {
	var m madeNetNS
	err := m.setUp(true)
	m.closeRelay()
	switch {
	case err != nil:
		return "bring up lo: " + err.Error()
	case m.relayErr != "":
		return m.relayErr
	}
	return ""
}

// relaySupport says, once per process, why the sandbox's network cannot have the relay on
// this machine ("" when it can): the kernel without nf_tables, its NAT or redirect, or a
// caller that cannot make network namespaces. It tries for real, in a network namespace of
// its own: a root caller's thread makes one; for an ordinary user a process is started in a
// user namespace of its own, as a builder would be (about a millisecond, once).
var relaySupport = sync.OnceValue(func() string {
	if relayKnownToWork() {
		return ""
	}
	why := tryRelay()
	if why == "" {
		rememberRelayWorks()
	}
	return why
})

// The answer "the relay works here" is kept for the rest of the boot, so that each
// `openworker run` does not pay for a network namespace of its own to find it out again (a
// third of a run's time on a small machine). Only that answer is kept: a machine without the
// relay is tried each time, so a forged or stale file can never turn the relay off (open
// mode would then share the host's network). At worst it turns the relay on where it does
// not work, and the session is refused with the step that failed; Start then forgets the
// answer. The file is in this user's runtime folder (root's: /run/openworker), which other
// users cannot write and which the boot empties.
func relayCachePath() string {
	if os.Geteuid() == 0 {
		return "/run/openworker/relay-works"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "openworker-relay-works")
	}
	return ""
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// relayKnownToWork says a process of this user found the relay working on this boot.
func relayKnownToWork() bool {
	path, id := relayCachePath(), bootID()
	if path == "" || id == "" {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && strings.TrimSpace(string(b)) == id
}

func rememberRelayWorks() {
	path, id := relayCachePath(), bootID()
	if path == "" || id == "" {
		return
	}
	if os.Geteuid() == 0 {
		_ = os.Mkdir(filepath.Dir(path), 0o700)
	}
	tmp := path + "." + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, []byte(id+"\n"), 0o600) == nil {
		if os.Rename(tmp, path) != nil {
			os.Remove(tmp)
		}
	}
}

// forgetRelayWorks drops the kept answer, after a sandbox whose relay it turned on failed.
func forgetRelayWorks() {
	if path := relayCachePath(); path != "" {
		_ = os.Remove(path)
	}
}

// tryRelay tries the relay's setup for real and says why it fails ("" when it works).
func tryRelay() string {
	if !ownUserNS() {
		return probeHere()
	}
	if os.Getenv(relayProbeVar) != "" {
		// This process is a probe whose binary does not call MaybeRunInit: it must not
		// start another.
		return "the binary does not call linux.MaybeRunInit first"
	}
	// In a user namespace of its own, as an ordinary user's builder is.
	attr := &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWNET | unix.CLONE_NEWUSER,
		Pdeathsig:   syscall.SIGKILL,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE},
	}
	var stderr strings.Builder
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{relayProbeArg0}, Env: []string{"GOMAXPROCS=1", relayProbeVar + "=1"},
		Stderr: &stderr, SysProcAttr: attr}
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	t := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	t.Stop()
	if err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		return why
	}
	return ""
}

// relayProbeVar marks the probe's environment (see relaySupport).
const relayProbeVar = "OPENWORKER_RELAY_PROBE"

// probeHere is relaySupport for a caller with the capabilities itself (root): the rules are
// tried in a network namespace this thread makes and leaves, as newNetNS does.
func probeHere() string {
	ch := make(chan string, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err.Error()
			return
		}
		defer own.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- "make a network namespace: " + err.Error()
			return
		}
		why := trySetUp()
		if back := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); back != nil {
			// Parked for good: no goroutine may run in the probe's network.
			ch <- "return to this process's network namespace: " + back.Error()
			select {}
		}
		runtime.UnlockOSThread()
		ch <- why
	}()
	return <-ch
}

// relayWanted says whether a sandbox of this network mode gets the relay: allowlist and open
// do where the machine supports it.
func relayWanted(n policy.Network) bool {
	return (n == policy.Allowlist || n == policy.Open) && relaySupport() == ""
}

// noRelay is what the wall says of itself on a machine without the relay, in this mode.
func noRelay(n policy.Network) string {
	why := relaySupport()
	if why == "" {
		return ""
	}
	switch n {
	case policy.Allowlist:
		return "no relay (" + why + "): programs that ignore the proxy variables have no network; " +
			"the kernel needs nf_tables with NAT and redirect (CONFIG_NF_TABLES_INET, CONFIG_NFT_NAT, CONFIG_NFT_REDIR)"
	case policy.Open:
		return "no relay (" + why + "): open mode shares the host's network (its loopback and private services are reachable); " +
			"the kernel needs nf_tables with NAT and redirect (CONFIG_NF_TABLES_INET, CONFIG_NFT_NAT, CONFIG_NFT_REDIR)"
	}
	return ""
}

// netnsFor says whether a sandbox of this network mode has a network of its own: allowlist
// and none always, open where the relay can keep the host's services out of its reach.
func netnsFor(n policy.Network) bool { return n != policy.Open || relayWanted(n) }

// takeRelay keeps the relay's listener or the stub's socket the builder sent.
func (pr *process) takeRelay(r *wallReport, oob []byte) error {
	f, err := sentFile(oob, "relay", r.Relay && pr.relay != nil || r.Stub && pr.stub != nil)
	if err == nil && f != nil {
		if r.Relay {
			pr.relay, err = net.FileListener(f)
		} else {
			pr.stub, err = net.FilePacketConn(f)
		}
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("linux sandbox: the relay's sockets: %w", err)
	}
	return nil
}

// RelayListeners hands over (once) the relay's listener and the DNS stub's socket inside the
// sandbox's network: nil where the sandbox has no relay.
func (pr *process) RelayListeners() (net.Listener, net.PacketConn) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	l, pc := pr.relay, pr.stub
	pr.relay, pr.stub = nil, nil
	return l, pc
}

// closeRelay closes what RelayListeners never handed over.
func (pr *process) closeRelay() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.relay != nil {
		pr.relay.Close()
		pr.relay = nil
	}
	if pr.stub != nil {
		pr.stub.Close()
		pr.stub = nil
	}
}

// OpenOwnNetwork says whether open mode has a network of its own on this machine, where the
// relay admits the internet and keeps this machine's loopback and private services out.
func (pv *Provider) OpenOwnNetwork() bool { return relayWanted(policy.Open) }
