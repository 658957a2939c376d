package egresstest

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/tstest"
)

// onThisHost marks the copy of the test binary that runs in the first host's network
// namespace; its value is the port of the second host's service.
const onThisHost = "OPENWORKER_EGRESS_TEST_THIS_HOST"

// Two hosts on one link, each a network namespace the test makes, with addresses of the
// documentation ranges (RFC 5737, RFC 3849), which the allow list treats as public. The link
// joins only the two namespaces, and neither has a route elsewhere: nothing leaves the
// machine. OpenWorker runs on the first; the second is another host on the internet.
const (
	thisV4  = "198.51.100.1"
	thisV6  = "2001:db8:38::1"
	otherV4 = "198.51.100.2"
	otherV6 = "2001:db8:38::2"
	// laterV4 is given to the first host once its session runs; localRoute is routed to the
	// first host itself then (a local route, as AnyIP setups make).
	laterV4    = "203.0.113.99"
	localRoute = "192.0.2.0/24"
	localV4    = "192.0.2.7"
)

// hostPair is the two hosts' network namespaces, by name.
type hostPair struct{ this, other string }

func newHostPair(t *testing.T) *hostPair {
	tag := strconv.Itoa(os.Getpid())
	h := &hostPair{this: "owt-this-" + tag, other: "owt-other-" + tag}
	for _, ns := range []string{h.this, h.other} {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	}
	ipCmd(t, "-n", h.this, "link", "add", "owt0", "type", "veth", "peer", "name", "owt1", "netns", h.other)
	for _, side := range []struct{ ns, dev, v4, v6 string }{{h.this, "owt0", thisV4, thisV6}, {h.other, "owt1", otherV4, otherV6}} {
		ipCmd(t, "-n", side.ns, "addr", "add", side.v4+"/24", "dev", side.dev)
		ipCmd(t, "-n", side.ns, "addr", "add", side.v6+"/64", "dev", side.dev, "nodad")
		ipCmd(t, "-n", side.ns, "link", "set", side.dev, "up")
	}
	return h
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// serveIn serves handle on every address of network namespace ns, from this process, and
// returns the port.
func serveIn(t *testing.T, ns string, handle func(net.Conn)) int {
	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type made struct {
		l   net.Listener
		err error
	}
	ch := make(chan made)
	go func() {
		// Never unlocked: the thread ends with this goroutine, in the namespace, and no other
		// goroutine runs on it meanwhile. The socket stays the namespace's.
		runtime.LockOSThread()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- made{err: err}
			return
		}
		l, err := net.Listen("tcp", "[::]:0")
		ch <- made{l, err}
	}()
	m := <-ch
	if m.err != nil {
		t.Fatal(m.err)
	}
	return tstest.ServeOn(t, m.l, handle).Addr().(*net.TCPAddr).Port
}

// TestThisMachinesOwnAddressesAreLoopback: a service that listens on every address of the
// machine OpenWorker runs on (a dev server, a database, Jupyter) is this machine's, whichever
// of its addresses a program names: its public IPv4 and global IPv6 addresses, a name that
// resolves to them, an address it gains after the session started, and one routed to itself.
// Open mode refuses each, naming it, as it refuses loopback, while another host's public
// addresses stay reachable; only an entry that names the address reaches it. The proxy
// refuses an allowed name that leads there too.
func TestThisMachinesOwnAddressesAreLoopback(t *testing.T) {
	if port := os.Getenv(onThisHost); port != "" {
		onTheFirstHost(t, port)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("making network namespaces takes root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip (iproute2) here")
	}
	h := newHostPair(t)
	other := serveIn(t, h.other, httpSite("the other host"))
	cmd := exec.Command("ip", "netns", "exec", h.this, os.Args[0], "-test.count=1", "-test.v", "-test.run", "^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), onThisHost+"="+strconv.Itoa(other))
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("on the first host: %v\n%s", err, out)
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("on the first host:\n%s", out)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("on the first host, the test did not pass:\n%s", out)
	}
}

// onTheFirstHost is the test, in the first host's network namespace.
func onTheFirstHost(t *testing.T, otherPort string) {
	w := newWorld(t)
	w.net.mu.Lock()
	w.net.direct = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:38::/64"),
		netip.MustParsePrefix(laterV4 + "/32"), netip.MustParsePrefix(localRoute)}
	w.net.names["this-host.test"] = []netip.Addr{netip.MustParseAddr(thisV4), netip.MustParseAddr(thisV6)}
	w.net.names["other-host.test"] = []netip.Addr{netip.MustParseAddr(otherV4), netip.MustParseAddr(otherV6)}
	w.net.mu.Unlock()
	var accepted atomic.Int32
	l, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	serve := httpSite("this machine's own service")
	port := strconv.Itoa(tstest.ServeOn(t, l, func(c net.Conn) { accepted.Add(1); serve(c) }).Addr().(*net.TCPAddr).Port)

	s := w.start(policy.Open)
	fetch := func(s *session.Session, url string, direct bool) (string, *session.Result) {
		noProxy := ""
		if direct {
			noProxy = "--noproxy '*' "
		}
		out, _, res := w.run(s, "curl -sS -m 10 "+noProxy+url)
		return out, res
	}
	for _, url := range []string{"http://" + otherV4 + ":" + otherPort + "/", "http://[" + otherV6 + "]:" + otherPort + "/", "http://other-host.test:" + otherPort + "/"} {
		if out, _ := fetch(s, url, true); !strings.Contains(out, "the other host") {
			t.Errorf("open mode, another host's public address %s:\n%s", url, out)
		}
	}

	ipCmd(t, "addr", "add", laterV4+"/32", "dev", "owt0")
	ipCmd(t, "route", "add", "local", localRoute, "dev", "lo")
	for _, c := range []struct{ url, host string }{
		{"http://" + thisV4 + ":" + port + "/", thisV4},
		{"http://[" + thisV6 + "]:" + port + "/", thisV6},
		{"http://this-host.test:" + port + "/", "this-host.test"},
		{"http://" + laterV4 + ":" + port + "/", laterV4},
		{"http://" + localV4 + ":" + port + "/", localV4},
	} {
		out, res := fetch(s, c.url, true)
		if strings.Contains(out, "own service") {
			t.Errorf("open mode reached this machine's service at %s:\n%s", c.url, out)
		}
		if !slices.ContainsFunc(res.Blocked, func(b session.Blocked) bool { return b.Host == c.host && strconv.Itoa(b.Port) == port }) {
			t.Errorf("open mode, %s: %s:%s is not among the blocked sites %v", c.url, c.host, port, res.Blocked)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("this machine's service accepted %d connections from open mode", n)
	}

	// An entry that names the address reaches it, as one naming 127.0.0.1 reaches loopback.
	s.SetSites([]hosts.Entry{mustEntry(t, thisV4+":"+port)}, nil)
	if out, _ := fetch(s, "http://"+thisV4+":"+port+"/", true); !strings.Contains(out, "own service") {
		t.Errorf("open mode, an entry naming %s:%s:\n%s", thisV4, port, out)
	}

	// Through the proxy: an allowed name that leads to this machine is refused, saying so
	// and which address to allow; the address's own entry reaches it.
	a := w.start(policy.Allowlist, "this-host.test:"+port, thisV4+":"+port)
	out, res := fetch(a, "http://this-host.test:"+port+"/", false)
	if strings.Contains(out, "own service") || !strings.Contains(out, "this machine") || !strings.Contains(out, thisV4+":"+port) {
		t.Errorf("the proxy, an allowed name that resolves to this machine:\n%s", out)
	}
	if !slices.ContainsFunc(res.Blocked, func(b session.Blocked) bool { return b.Host == "this-host.test" }) {
		t.Errorf("the proxy's refusal is not among the blocked sites %v", res.Blocked)
	}
	if out, _ := fetch(a, "http://"+thisV4+":"+port+"/", false); !strings.Contains(out, "own service") {
		t.Errorf("the proxy, the address's own entry:\n%s", out)
	}
	if out, _ := fetch(a, "http://this-host.test:"+port+"/", true); strings.Contains(out, "own service") {
		t.Errorf("the relay in allowlist mode, an allowed name that resolves to this machine:\n%s", out)
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("this machine's service accepted %d connections, want the 2 its address's entry allowed", n)
	}
}
