package egresstest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/dnsstub"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tstest"
)

func TestMain(m *testing.M) {
	linux.MaybeRunInit()
	if len(os.Args) > 1 && os.Args[1] == session.RunnerArg {
		if runner.Main() != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// internet stands in for the internet: names resolve to documentation addresses
// (203.0.113.0/24, which the allow list treats as public), and a dial to one of them at a
// port reaches a server on this machine's loopback instead. Nothing is ever dialled elsewhere,
// but for the addresses in direct: those of network namespaces a test made, which lead
// nowhere else.
type internet struct {
	mu     sync.Mutex
	names  map[string][]netip.Addr
	origin map[netip.AddrPort]string
	direct []netip.Prefix
	dialed []string
}

func (n *internet) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.names[host]; ok {
		return slices.Clone(a), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (n *internet) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.dialed = append(n.dialed, address)
	origin, ok := n.origin[ap]
	direct := slices.ContainsFunc(n.direct, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) })
	n.mu.Unlock()
	if !ok {
		if ap.Addr().IsLoopback() || direct {
			return (&net.Dialer{}).DialContext(ctx, network, address)
		}
		return nil, fmt.Errorf("stand-in internet: nothing at %s (and nothing is dialled off this machine)", address)
	}
	return (&net.Dialer{}).DialContext(ctx, network, origin)
}

func (n *internet) dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.dialed)
}

// site puts name at a fresh documentation address, serving port with handle.
func (n *internet) site(t *testing.T, name string, port int, handle func(net.Conn)) netip.Addr {
	l := tstest.Serve(t, handle)
	n.mu.Lock()
	defer n.mu.Unlock()
	a := netip.AddrFrom4([4]byte{203, 0, 113, byte(10 + len(n.names))})
	n.names[name] = []netip.Addr{a}
	n.origin[netip.AddrPortFrom(a, uint16(port))] = l.Addr().String()
	return a
}

// httpSite answers every request with body.
func httpSite(body string) func(net.Conn) {
	return func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		var got []byte
		for !strings.Contains(string(got), "\r\n\r\n") {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			got = append(got, buf[:n]...)
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	}
}

// world is a session manager with the Linux wall and the stand-in internet.
type world struct {
	t       *testing.T
	net     *internet
	m       *session.Manager
	project string
	// home and state are the person's home folder and OpenWorker's state folder.
	home, state string
	refused     atomic.Int32
}

func newWorld(t *testing.T) *world { return newWorldWith(t, nil) }

// newWorldWith is newWorld with its manager's options changed by opts (nil: none).
func newWorldWith(t *testing.T, opts func(*session.Options)) *world {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prov := &linux.Provider{}
	st := prov.Check(ctx)
	if !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	if !slices.ContainsFunc(st.Details, func(d string) bool { return strings.HasPrefix(d, "relay:") }) {
		t.Skipf("this machine's sandboxes have no relay: %v", st.Details)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, net: &internet{names: map[string][]netip.Addr{}, origin: map[netip.AddrPort]string{}}}
	home := filepath.Join(root, "home")
	w.project = filepath.Join(root, "project")
	w.home, w.state = home, filepath.Join(root, "state")
	for _, d := range []string{home, w.project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := session.Options{
		Providers: map[sandbox.Enforcement]sandbox.Provider{prov.Name(): prov},
		UserHome:  home, StateDir: w.state, TmpRoot: root, GOOS: "linux",
		RunnerPath: exe, HostEnv: []string{"PATH=" + os.Getenv("PATH")},
		Resolver: w.net, Dial: w.net.Dial,
	}
	if opts != nil {
		opts(&o)
	}
	w.m, err = session.NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.m.EndAll)
	return w
}

func (w *world) start(network policy.Network, allow ...string) *session.Session {
	w.t.Helper()
	var list []hosts.Entry
	for _, a := range allow {
		e, err := hosts.Parse(a)
		if err != nil {
			w.t.Fatal(err)
		}
		list = append(list, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := w.m.Start(ctx, session.Spec{Provider: sandbox.Linux, Writable: []string{w.project}, Network: network, Hosts: list,
		OnRefusal: func(proxy.Refusal) { w.refused.Add(1) }})
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// run runs a shell command in s and returns its output, both streams.
func (w *world) run(s *session.Session, cmd string) (string, int, *session.Result) {
	w.t.Helper()
	res, err := s.Exec(runner.ExecArgs{Command: cmd, Timeout: time.Minute}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	if res.Error != "" {
		w.t.Fatalf("%s: %s", cmd, res.Error)
	}
	return string(res.Stdout) + string(res.Stderr), res.ExitCode, res
}

// clients are the programs that ignore the proxy variables, each fetching http://NAME/.
var clients = []struct {
	name, cmd, needs string
}{
	{"curl", `curl -sS --noproxy '*' -m 10 http://NAME/`, "curl"},
	{"python", `python3 -c "import socket; c = socket.create_connection(('NAME', 80), timeout=10); c.sendall(b'GET / HTTP/1.1\r\nHost: NAME\r\nConnection: close\r\n\r\n'); print(c.makefile('rb').read().decode(errors='replace'))"`, "python3"},
	{"node", `node -e "fetch('http://NAME/').then(r => r.text()).then(t => console.log(t), e => { console.log('failed: ' + e.cause); process.exit(1) })"`, "node"},
}

func clientCmd(cmd, name string) string {
	return strings.ReplaceAll(cmd, "NAME", name)
}

// TestDirectClientsReachAnAllowedName: curl that ignores the proxy, a Python socket and Node
// 20's fetch (which never reads the proxy variables) reach a name on the allow list.
func TestDirectClientsReachAnAllowedName(t *testing.T) {
	w := newWorld(t)
	w.net.site(t, "allowed.test", 80, httpSite("the allowed site"))
	s := w.start(policy.Allowlist, "allowed.test:80")
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.needs); err != nil {
				t.Skipf("no %s here", c.needs)
			}
			out, code, _ := w.run(s, clientCmd(c.cmd, "allowed.test"))
			if code != 0 || !strings.Contains(out, "the allowed site") {
				t.Errorf("exit %d:\n%s", code, out)
			}
		})
	}
}

// TestDirectClientsRefusedThenACardOpens: the same clients to a name not on the list are
// refused; the refusal is in the result's blocked sites and the refusal hook (which makes a
// card); once the list holds the name, as an answer to the card makes it, the very next
// connection goes through.
func TestDirectClientsRefusedThenACardOpens(t *testing.T) {
	w := newWorld(t)
	w.net.site(t, "allowed.test", 80, httpSite("the allowed site"))
	w.net.site(t, "unlisted.test", 80, httpSite("the unlisted site"))
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.needs); err != nil {
				t.Skipf("no %s here", c.needs)
			}
			s := w.start(policy.Allowlist, "allowed.test:80")
			before, dialedBefore := w.refused.Load(), len(w.net.dials())
			out, code, res := w.run(s, clientCmd(c.cmd, "unlisted.test"))
			if strings.Contains(out, "the unlisted site") {
				t.Fatalf("an unlisted name was reached:\n%s", out)
			}
			if !slices.ContainsFunc(res.Blocked, func(b session.Blocked) bool { return b.String() == "unlisted.test:80" }) {
				t.Errorf("exit %d, blocked %v: unlisted.test:80 is not among the blocked sites:\n%s", code, res.Blocked, out)
			}
			if w.refused.Load() == before {
				t.Error("the refusal hook, which makes the card, was not told")
			}
			for _, d := range w.net.dials()[dialedBefore:] {
				if strings.HasPrefix(d, "203.0.113.11:") {
					t.Errorf("the refused name was dialled: %s", d)
				}
			}
			s.SetSites([]hosts.Entry{mustEntry(t, "allowed.test:80"), mustEntry(t, "unlisted.test:80")}, nil)
			if out, code, _ := w.run(s, clientCmd(c.cmd, "unlisted.test")); code != 0 || !strings.Contains(out, "the unlisted site") {
				t.Errorf("after the card's answer: exit %d:\n%s", code, out)
			}
		})
	}
}

func mustEntry(t *testing.T, s string) hosts.Entry {
	e, err := hosts.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestLiteralAddressNeedsItsOwnServerName: a connection to an address the stub did not
// give out, whose TLS server name is an allowed name, goes through only when the address is
// that name's own.
func TestLiteralAddressNeedsItsOwnServerName(t *testing.T) {
	w := newWorld(t)
	var reached atomic.Int32
	count := func(c net.Conn) { reached.Add(1) }
	own := w.net.site(t, "allowed.test", 443, count)
	other := w.net.site(t, "elsewhere.test", 443, count)
	s := w.start(policy.Allowlist, "allowed.test:443")
	curl := func(addr netip.Addr) string {
		out, _, _ := w.run(s, "curl -sS --noproxy '*' -m 10 --resolve allowed.test:443:"+addr.String()+" https://allowed.test/")
		return out
	}
	curl(own)
	if reached.Load() != 1 {
		t.Fatalf("the allowed name at its own address did not reach it (%d)", reached.Load())
	}
	before := w.refused.Load()
	out := curl(other)
	if reached.Load() != 1 {
		t.Fatalf("the allowed name's server name at another site's address reached it:\n%s", out)
	}
	if w.refused.Load() == before {
		t.Errorf("the mismatch was not refused as a refusal:\n%s", out)
	}
}

// TestUDPOnlyToTheStub: names are answered by the stub with its own addresses; a datagram
// to any other address (a DNS server of the program's own choosing) is refused at once.
func TestUDPOnlyToTheStub(t *testing.T) {
	w := newWorld(t)
	s := w.start(policy.Allowlist)
	out, code, _ := w.run(s, `python3 -c "
import socket
print(socket.gethostbyname('anything.test'))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b'\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01', ('203.0.113.53', 53))
    u.settimeout(2)
    print('answered', u.recv(512))
except OSError as e:
    print('refused', e.errno)
"`)
	if code != 0 || !strings.Contains(out, "198.18.") || !strings.Contains(out, "refused 1") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestOpenModeReachesTheInternetNotThisMachine: in open mode a program that ignores the
// proxy reaches the stand-in internet by name, but not a service on this machine's loopback.
func TestOpenModeReachesTheInternetNotThisMachine(t *testing.T) {
	w := newWorld(t)
	w.net.site(t, "anywhere.test", 80, httpSite("the internet"))
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			io.WriteString(c, "host-service\n")
			c.Close()
		}
	}()
	s := w.start(policy.Open)
	if out, code, _ := w.run(s, clientCmd(clients[0].cmd, "anywhere.test")); code != 0 || !strings.Contains(out, "the internet") {
		t.Errorf("open mode, a name on the internet: exit %d:\n%s", code, out)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	out, code, res := w.run(s, "python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', "+port+"), timeout=5).recv(64).decode())\"")
	if code == 0 || strings.Contains(out, "host-service") || accepted.Load() != 0 {
		t.Errorf("open mode reached the host's loopback service: exit %d:\n%s", code, out)
	}
	if res.Reach != "" {
		t.Errorf("an open session with the relay still says it reaches this machine: %s", res.Reach)
	}
}

// TestNoneHasNoNetwork: --network none has no stub and no relay: no name resolves and no
// address is reachable.
func TestNoneHasNoNetwork(t *testing.T) {
	w := newWorld(t)
	a := w.net.site(t, "anywhere.test", 80, httpSite("the internet"))
	s := w.start(policy.None)
	out, _, _ := w.run(s, `python3 -c "
import socket
for what in (lambda: socket.gethostbyname('anywhere.test'), lambda: socket.create_connection(('`+a.String()+`', 80), timeout=3)):
    try:
        print('reached', what())
    except OSError as e:
        print('failed', e)
"`)
	if strings.Contains(out, "reached") || strings.Count(out, "failed") != 2 {
		t.Errorf("network none:\n%s", out)
	}
	if d := w.net.dials(); len(d) != 0 {
		t.Errorf("network none dialled %v", d)
	}
}

// TestRoutesAndRulesStayInside: nothing inside may change the network the relay relies on.
// A program that asks the kernel to delete the default route (as it would to take the
// rules away: both need CAP_NET_ADMIN over the sandbox's network) is refused, and the
// route is still there.
func TestRoutesAndRulesStayInside(t *testing.T) {
	w := newWorld(t)
	s := w.start(policy.Allowlist)
	out, code, _ := w.run(s, `python3 -c "
import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.bind((0, 0))
# RTM_DELROUTE (25), NLM_F_REQUEST|NLM_F_ACK; rtmsg for the IPv4 main table's default route
rt = struct.pack('BBBBBBBBI', socket.AF_INET, 0, 0, 0, 254, 0, 0, 1, 0)
msg = struct.pack('IHHII', 16 + len(rt), 25, 1 | 4, 1, 0) + rt
s.send(msg)
ack = s.recv(4096)
print('errno', -struct.unpack('i', ack[16:20])[0])
"
awk '$2 == "00000000" { print "default route", $1 }' /proc/net/route`)
	if code != 0 || !strings.Contains(out, "errno 1\n") || !strings.Contains(out, "default route lo") {
		t.Errorf("exit %d: want the deletion refused (EPERM) and the route through lo left:\n%s", code, out)
	}
}

// TestRelayAfterTheWallIsMadeAgain: adding a folder makes the wall again; the new wall's
// relay and stub are served, and a name the stub gave out before stands for the same name.
func TestRelayAfterTheWallIsMadeAgain(t *testing.T) {
	w := newWorld(t)
	w.net.site(t, "allowed.test", 80, httpSite("the allowed site"))
	s := w.start(policy.Allowlist, "allowed.test:80")
	cmd := clientCmd(clients[0].cmd, "allowed.test")
	if out, code, _ := w.run(s, cmd); code != 0 || !strings.Contains(out, "the allowed site") {
		t.Fatalf("before: exit %d:\n%s", code, out)
	}
	extra := filepath.Join(filepath.Dir(w.project), "extra")
	if err := os.MkdirAll(extra, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AddFolder(ctx, extra, true); err != nil {
		t.Fatal(err)
	}
	if out, code, _ := w.run(s, cmd); code != 0 || !strings.Contains(out, "the allowed site") {
		t.Fatalf("after the wall was made again: exit %d:\n%s", code, out)
	}
}

// TestStubPastItsNamesStillAnswers: a program that asks the stub for more names than a
// session keeps (dnsstub.MaxNames) does not leave the session without names: those no
// connection uses are given back, least recently used first, and an allowed name asked for
// afterwards answers and is reached.
func TestStubPastItsNamesStillAnswers(t *testing.T) {
	w := newWorld(t)
	w.net.site(t, "allowed.test", 80, httpSite("the allowed site"))
	s := w.start(policy.Allowlist, "allowed.test:80")
	out, code, _ := w.run(s, `python3 -c "
import socket
failed = 0
for i in range(`+strconv.Itoa(dnsstub.MaxNames+100)+`):
    try:
        socket.gethostbyname('n%d.flood.test' % i)
    except OSError:
        failed += 1
print('failed', failed)
"`)
	if code != 0 || !strings.Contains(out, "failed 0\n") {
		t.Errorf("asking for the names, none held by a connection: exit %d:\n%s", code, out)
	}
	if out, code, _ := w.run(s, clientCmd(clients[0].cmd, "allowed.test")); code != 0 || !strings.Contains(out, "the allowed site") {
		t.Errorf("an allowed name after %d others: exit %d:\n%s", dnsstub.MaxNames+100, code, out)
	}
}

// TestLoginHostsOnTheFirstList: the hosts a shared login brings are on the session's list
// from its start, for the first command too, not only once the backend swaps the lists.
func TestLoginHostsOnTheFirstList(t *testing.T) {
	w := newWorld(t)
	var reached atomic.Int32
	w.net.site(t, "api.github.com", 443, func(c net.Conn) { reached.Add(1) })
	os.MkdirAll(filepath.Join(w.home, ".config", "gh"), 0o700)
	os.WriteFile(filepath.Join(w.home, ".config", "gh", "config.yml"), []byte("git_protocol: https\n"), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := w.m.Start(ctx, session.Spec{Provider: sandbox.Linux, Writable: []string{w.project}, Network: policy.Allowlist,
		Logins: credentials.Entries([]config.Credential{{Name: "gh", Secrets: config.SecretsCopy, Enabled: true}})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	out, _, res := w.run(s, "curl -sS -m 10 https://api.github.com/")
	if reached.Load() != 1 || len(res.Blocked) > 0 {
		t.Fatalf("api.github.com, a host of the gh login, was not reached (blocked %v):\n%s", res.Blocked, out)
	}
}
