package linux

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/tstest"
)

// pyServe listens on 127.0.0.1 and [::1] at one port chosen by the kernel, connects to
// itself at both, and prints what happened.
const pyServe = `
import socket
try:
    a = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    a.bind(("127.0.0.1", 0)); a.listen(1)
    port = a.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    b = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    b.bind(("::1", port)); b.listen(1)
    socket.create_connection(("::1", port), timeout=2).close()
    f = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    f.bind(("127.0.0.1", 18099)); f.listen(1)
    socket.create_connection(("localhost", 18099), timeout=2).close()
    print("SERVED")
except OSError as e:
    print("ERR", e.strerror)
`

// A server inside listens on the sandbox's own loopback, at a port of its choosing or the
// kernel's, and programs inside reach it; in every mode with a network of its own.
func TestServerOnTheSandboxesLoopback(t *testing.T) {
	w := newWorld(t)
	for _, n := range []policy.Network{policy.Allowlist, policy.None} {
		t.Run(string(n), func(t *testing.T) {
			out, code := run(t, w, w.policy(t, n, 18080), `python3 -c "$PY"`, "PY="+pyServe)
			if code != 0 || !strings.Contains(out, "SERVED") {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}
}

// The proxy's listener inside answers at 127.0.0.1 and [::1], at one port.
func TestProxyListenerAtBothLoopbacks(t *testing.T) {
	w := newWorld(t)
	const port = 18082
	s := start(t, w, w.policy(t, policy.Allowlist, port), fmt.Sprintf(`python3 -c '
import socket
for host in ("127.0.0.1", "::1"):
    c = socket.create_connection((host, %d), timeout=2)
    c.sendall(b"hello\n")
    print(host, c.recv(64).decode().strip())
'`, port))
	ln := s.proc.ProxyListener()
	if ln == nil {
		t.Fatal("no proxy listener")
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 64)
				n, _ := c.Read(b)
				c.Write([]byte("proxy heard " + string(b[:n])))
			}()
		}
	}()
	out, code := s.wait(t)
	for _, want := range []string{"127.0.0.1 proxy heard hello", "::1 proxy heard hello"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d: want %q in:\n%s", code, want, out)
		}
	}
}

// Each sandbox has a /dev/shm of its own: writable, bounded, not the host's; and Python's
// process pools, which need it for their semaphores, work.
func TestDevShmIsTheSandboxesOwn(t *testing.T) {
	w := newWorld(t)
	marker := fmt.Sprintf("/dev/shm/openworker-linux-test-%d", os.Getpid())
	if err := os.WriteFile(marker, []byte("host"), 0o600); err != nil {
		t.Skipf("no /dev/shm on the host to compare with: %v", err)
	}
	t.Cleanup(func() { os.Remove(marker) })
	out, code := run(t, w, w.policy(t, policy.None, 0), `ls -a /dev/shm; echo inside > /dev/shm/mine && cat /dev/shm/mine
df -k /dev/shm | tail -1
python3 -c 'import multiprocessing as m; print(m.Pool(2).map(abs, [-1, -2]))'`)
	if code != 0 || !strings.Contains(out, "inside\n") || !strings.Contains(out, "[1, 2]") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, filepath.Base(marker)) {
		t.Errorf("the host's /dev/shm is visible inside:\n%s", out)
	}
	if !strings.Contains(out, " 65536 ") {
		t.Errorf("want a 64 MiB /dev/shm:\n%s", out)
	}
	absent("/dev/shm/mine")(t)
}

// A host loopback port in the policy's forwards is reachable inside at the same address and
// port, relayed by the core's proxy under its allow list; a server inside cannot take the
// port; and once the forward closes (its entry revoked), the port refuses.
func TestForwardedHostPort(t *testing.T) {
	need := func(p string) {
		if !exists(p) {
			t.Skipf("%s is absent", p)
		}
	}
	need("/usr/bin/curl")
	origin := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello-from-the-host")
	})}
	oln, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	go origin.Serve(oln)
	t.Cleanup(func() { origin.Close() })
	addr := netip.MustParseAddrPort(oln.Addr().String())

	w := newWorld(t)
	p := w.policy(t, policy.Allowlist, 18083)
	p.Forwards = []netip.AddrPort{addr}
	step := filepath.Join(w.project, "step")
	s := start(t, w, p, fmt.Sprintf(`url=http://%[1]s/
curl -sS --noproxy '*' --max-time 5 $url; echo " first=$?"
python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.bind(("127.0.0.1", %[2]d)); print("TOOK THE PORT")
except OSError as e:
    print("bind:", e.strerror)
'
curl -sS --noproxy '*' --max-time 5 $url; echo " second=$?"
echo asked > "$P/step"
while [ "$(cat "$P/step")" != closed ]; do sleep 0.02; done
curl -sS --noproxy '*' --max-time 5 $url; echo " after=$?"`, addr, addr.Port()))
	ls, refused := s.proc.(interface {
		ForwardListeners() (map[int]net.Listener, map[int]string)
	}).ForwardListeners()
	if len(refused) != 0 || ls[int(addr.Port())] == nil {
		t.Fatalf("forward listeners %v, refused %v", ls, refused)
	}
	entry, err := hosts.Parse(addr.String())
	must(t, err)
	px, err := proxy.New(proxy.Options{Token: proxy.NewToken(), Allow: []hosts.Entry{entry}})
	must(t, err)
	t.Cleanup(func() { px.Close() })
	if _, err := px.Forward(ls[int(addr.Port())], int(addr.Port())); err != nil {
		t.Fatal(err)
	}
	tstest.WaitFor(t, 20*time.Second, func() error {
		if b, _ := os.ReadFile(step); string(b) == "asked\n" {
			return nil
		}
		return errors.New("the script never got to the revocation")
	})
	// The entry is revoked: the forward closes with it.
	px.SetAllowList(nil)
	must(t, os.WriteFile(step, []byte("closed"), 0o644))
	out, _ := s.wait(t)
	for _, want := range []string{"hello-from-the-host first=0", "bind: Address already in use", "hello-from-the-host second=0", " after=7"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TOOK THE PORT") {
		t.Errorf("a server inside took the forwarded port")
	}
	refusedByProxy := px.Blocked(time.Now().Add(-time.Minute), time.Now())
	if len(refusedByProxy) != 0 {
		t.Errorf("the proxy refused %v", refusedByProxy)
	}
}

// Only host loopback ports are forwarded, only in allowlist mode, never at the proxy's port.
func TestForwardPlanRefuses(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.Allowlist, 18084)
	p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:18084")}
	if _, err := planWall(p, sandboxSpec("/bin/true")); err == nil || !strings.Contains(err.Error(), "proxy's own port") {
		t.Fatalf("a forward at the proxy's port was planned: %v", err)
	}
	p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:80")}
	if _, err := planWall(p, sandboxSpec("/bin/true")); err == nil || !strings.Contains(err.Error(), "only the host's loopback") {
		t.Fatalf("a forward of a non-loopback address was planned: %v", err)
	}
	p.Forwards = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}
	p.Network = policy.None
	if _, err := planWall(p, sandboxSpec("/bin/true")); err == nil || !strings.Contains(err.Error(), "only in allowlist mode") {
		t.Fatalf("a forward in none mode was planned: %v", err)
	}
}

// The core counts, from outside, a program's attempts to connect where the sandbox's network
// has no route; nothing is sent by them. A sandbox with the relay has a route for every
// connection (the relay decides it); one without (network none, or a machine without
// nf_tables) has none.
func TestNoRouteCountsDirectAttempts(t *testing.T) {
	w := newWorld(t)
	step := filepath.Join(w.project, "step")
	// 192.0.2.1 and 2001:db8::1 are documentation addresses; the script makes sure there is
	// no route before it tries.
	s := start(t, w, w.policy(t, policy.None, 0), `[ "$(wc -l < /proc/net/route)" -le 1 ] || { echo "a route exists"; exit 99; }
python3 -c '
import socket
for host in ("192.0.2.1", "2001:db8::1"):
    try:
        socket.create_connection((host, 80), timeout=1)
    except OSError as e:
        print(host, e.strerror)
'
echo tried > "$P/step"
while [ "$(cat "$P/step")" != counted ]; do sleep 0.02; done`)
	counter := s.proc.(interface{ NoRoute() (uint64, error) })
	tstest.WaitFor(t, 20*time.Second, func() error {
		if b, _ := os.ReadFile(step); string(b) == "tried\n" {
			return nil
		}
		return errors.New("the script never tried")
	})
	n, err := counter.NoRoute()
	must(t, os.WriteFile(step, []byte("counted"), 0o644))
	out, code := s.wait(t)
	if code != 0 || strings.Count(out, "Network is unreachable") != 2 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if err != nil || n != 2 {
		t.Errorf("NoRoute = %d, %v; want the 2 attempts", n, err)
	}
}

// A port allowed after the wall was built is forwarded into the running sandbox (by a root
// caller, which can enter its network), unless a server inside has it already: that server
// keeps it, and the forward is refused with EADDRINUSE.
func TestForwardMadeLater(t *testing.T) {
	origin := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello-from-the-host")
	})}
	oln, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	go origin.Serve(oln)
	t.Cleanup(func() { origin.Close() })
	addr := netip.MustParseAddrPort(oln.Addr().String())
	w := newWorld(t)
	step := filepath.Join(w.project, "step")
	const taken = 18097
	s := start(t, w, w.policy(t, policy.Allowlist, 18086), fmt.Sprintf(`python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", %d)); s.listen(1)
open("%s", "w").write("listening")
while open("%[2]s").read() != "forwarded":
    time.sleep(0.02)
' &
while [ "$(cat "$P/step" 2>/dev/null)" != forwarded ]; do sleep 0.02; done
curl -sS --noproxy '*' --max-time 5 http://%s/; echo " later=$?"
wait`, taken, step, addr))
	tstest.WaitFor(t, 20*time.Second, func() error {
		if b, _ := os.ReadFile(step); string(b) == "listening" {
			return nil
		}
		return errors.New("the server inside never listened")
	})
	fw := s.proc.(interface {
		ForwardListen(int) (net.Listener, error)
	})
	_, errTaken := fw.ForwardListen(taken)
	l, err := fw.ForwardListen(int(addr.Port()))
	if os.Getuid() != 0 {
		must(t, os.WriteFile(step, []byte("forwarded"), 0o644))
		s.wait(t)
		if err == nil {
			t.Fatal("an ordinary user's core entered the sandbox's network")
		}
		t.Logf("as an ordinary user the port is forwarded from the next wall on: %v", err)
		return
	}
	if !errors.Is(errTaken, unix.EADDRINUSE) {
		t.Errorf("the port a server inside listens on: %v, want EADDRINUSE", errTaken)
	}
	must(t, err)
	entry, err := hosts.Parse(addr.String())
	must(t, err)
	px, err := proxy.New(proxy.Options{Token: proxy.NewToken(), Allow: []hosts.Entry{entry}})
	must(t, err)
	t.Cleanup(func() { px.Close() })
	if _, err := px.Forward(l, int(addr.Port())); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(step, []byte("forwarded"), 0o644))
	out, code := s.wait(t)
	if code != 0 || !strings.Contains(out, "hello-from-the-host later=0") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// The host's own network is as it was: the listener is not on the host.
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", taken), time.Second); err == nil {
		c.Close()
		t.Error("a forward's listener landed on the host's loopback")
	}
}
