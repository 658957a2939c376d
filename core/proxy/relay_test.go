package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// relayRig serves a relay whose "redirected" connections say where they were going
// through a table the test fills, keyed by the client's own address.
type relayRig struct {
	t    *testing.T
	p    *Proxy
	fn   *fakeNet
	addr string
	mu   sync.Mutex
	dst  map[string]netip.AddrPort
	refs []Refusal
	// held counts the connections that hold each stub name now, taken those that did.
	held, taken map[netip.Addr]int
}

func newRelayRig(t *testing.T, open bool, names map[netip.Addr]string, allow ...string) *relayRig {
	return newRelayRigCap(t, 0, open, names, allow...)
}

// newRelayRigCap is newRelayRig with the proxy's connection cap (0: the default).
func newRelayRigCap(t *testing.T, maxConns int, open bool, names map[netip.Addr]string, allow ...string) *relayRig {
	r := &relayRig{t: t, fn: newFakeNet(), dst: map[string]netip.AddrPort{}, held: map[netip.Addr]int{}, taken: map[netip.Addr]int{}}
	p, err := New(Options{Token: NewToken(), Allow: entries(t, allow...), Resolver: r.fn, Dial: r.fn.Dial, MaxConns: maxConns,
		OnRefusal: func(ref Refusal) { r.mu.Lock(); r.refs = append(r.refs, ref); r.mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	t.Cleanup(func() { p.Close() })
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	go p.ServeRelay(l, Relay{Open: open,
		Names: func(a netip.Addr) (string, func(), bool) {
			n, ok := names[a]
			if !ok {
				return "", nil, false
			}
			r.mu.Lock()
			r.held[a]++
			r.taken[a]++
			r.mu.Unlock()
			return n, func() { r.mu.Lock(); r.held[a]--; r.mu.Unlock() }, true
		},
		OriginalDst: func(c net.Conn) (netip.AddrPort, error) {
			// The client records where it "connected" once its dial returns, which may be
			// after the accept.
			for range 500 {
				r.mu.Lock()
				d, ok := r.dst[c.RemoteAddr().String()]
				r.mu.Unlock()
				if ok {
					return d, nil
				}
				time.Sleep(time.Millisecond)
			}
			return netip.AddrPort{}, io.EOF
		}})
	return r
}

// dial connects "to" dst through the relay.
func (r *relayRig) dial(dst string) net.Conn {
	c, err := net.Dial("tcp4", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.dst[c.LocalAddr().String()] = netip.MustParseAddrPort(dst)
	r.mu.Unlock()
	return c
}

func (r *relayRig) refusals() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.refs...)
}

// get sends a plain HTTP request over c and returns the status line's code and the body.
func get(t *testing.T, c net.Conn, host string) (int, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRelayDecidesByTheStubsName(t *testing.T) {
	origin := tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\norigin")
	})
	synth := map[netip.Addr]string{netip.MustParseAddr("198.18.0.1"): "allowed.test", netip.MustParseAddr("198.18.0.2"): "other.test"}
	r := newRelayRig(t, false, synth, "allowed.test:80")
	r.fn.route("allowed.test", 80, origin.Addr().String())
	r.fn.route("other.test", 80, origin.Addr().String())

	if code, body := get(t, r.dial("198.18.0.1:80"), "allowed.test"); code != 200 || body != "origin" {
		t.Fatalf("allowed name: %d %q", code, body)
	}
	code, body := get(t, r.dial("198.18.0.2:80"), "other.test")
	if code != 403 || !strings.Contains(body, "other.test:80 is not on this session's allow list") {
		t.Fatalf("unlisted name: %d %q", code, body)
	}
	if refs := r.refusals(); len(refs) != 1 || refs[0].Target() != "other.test:80" || len(r.p.Blocked(time.Time{}, time.Now())) != 1 {
		t.Fatalf("refusals: %+v", refs)
	}
	for _, d := range r.fn.dials() {
		if strings.HasPrefix(d, "203.0.113.11") {
			t.Errorf("the refused name was dialled: %s", d)
		}
	}
	// What a card's answer does: the list changes, and the very next connection goes.
	r.p.SetAllowList(entries(t, "allowed.test:80", "other.test:80"))
	if code, body := get(t, r.dial("198.18.0.2:80"), "other.test"); code != 200 || body != "origin" {
		t.Fatalf("after the list changed: %d %q", code, body)
	}
	// A program that is not HTTP is closed, not answered.
	r.p.SetAllowList(entries(t, "allowed.test:80"))
	c := r.dial("198.18.0.2:80")
	c.Write([]byte{0, 1, 2})
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c); len(b) != 0 || err != nil {
		t.Errorf("a refused raw connection read %q, %v; want a clean close", b, err)
	}
}

// TestRelayHoldsTheStubsNameWhileConnected: a connection to a name's stand-in address holds
// the name, which the stub then never gives back, until the connection ends; a refused one
// lets it go at once.
func TestRelayHoldsTheStubsNameWhileConnected(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	a, b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	r := newRelayRig(t, false, map[netip.Addr]string{a: "allowed.test", b: "other.test"}, "allowed.test:7")
	r.fn.route("allowed.test", 7, echo.Addr().String())
	held := func(x netip.Addr) int { r.mu.Lock(); defer r.mu.Unlock(); return r.held[x] }
	c := r.dial("198.18.0.1:7")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "ping")
	if buf := make([]byte, 4); func() error { _, err := io.ReadFull(c, buf); return err }() != nil || held(a) != 1 {
		t.Fatalf("while the connection is open, the name is held by %d connections, want 1", held(a))
	}
	c.Close()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if n := held(a); n != 0 {
			return fmt.Errorf("the ended connection still holds the name (%d)", n)
		}
		return nil
	})
	r.dial("198.18.0.2:7").Close()
	tstest.WaitFor(t, 5*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if n, was := r.held[b], r.taken[b]; was != 1 || n != 0 {
			return fmt.Errorf("the refused connection took the name %d times and holds it %d times; want once, and no more", was, n)
		}
		return nil
	})
}

func TestRelayChecksTheServerNameOfALiteralAddress(t *testing.T) {
	origin := tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		io.WriteString(c, "reached")
	})
	r := newRelayRig(t, false, nil, "allowed.test:443")
	r.fn.route("allowed.test", 443, origin.Addr().String())   // 203.0.113.10
	r.fn.route("elsewhere.test", 443, origin.Addr().String()) // 203.0.113.11
	hello := func(dst, sni string) (string, error) {
		c := r.dial(dst)
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(clientHello(t, sni))
		b, err := io.ReadAll(c)
		return string(b), err
	}
	if got, _ := hello("203.0.113.10:443", "allowed.test"); got != "reached" {
		t.Errorf("the allowed name at its own address: %q", got)
	}
	if got, _ := hello("203.0.113.11:443", "allowed.test"); got != "" {
		t.Errorf("the allowed name at another address: %q, want refused", got)
	}
	refs := r.refusals()
	if len(refs) != 1 || refs[0].Target() != "203.0.113.11:443" || !strings.Contains(refs[0].Reason, "not one of allowed.test's addresses") {
		t.Fatalf("refusals: %+v", refs)
	}
	if got, _ := hello("203.0.113.11:443", "elsewhere.test"); got != "" {
		t.Errorf("an unlisted name: %q, want refused", got)
	}
}

func TestRelayOpenModeKeepsThisMachineOut(t *testing.T) {
	origin := tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) { io.WriteString(c, "reached") })
	r := newRelayRig(t, true, map[netip.Addr]string{netip.MustParseAddr("198.18.0.1"): "anywhere.test", netip.MustParseAddr("198.18.0.2"): "inside.test"})
	r.fn.route("anywhere.test", 7000, origin.Addr().String())
	r.fn.resolveTo("inside.test", "10.1.2.3")
	read := func(dst string) string {
		c := r.dial(dst)
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		return string(b)
	}
	if got := read("198.18.0.1:7000"); got != "reached" {
		t.Errorf("a public name in open mode: %q", got)
	}
	if got := read("203.0.113.10:7000"); got != "reached" {
		t.Errorf("a public address in open mode: %q", got)
	}
	for _, dst := range []string{"198.18.0.2:7000", "10.1.2.3:7000", "192.168.1.1:22", "169.254.169.254:80"} {
		if got := read(dst); got != "" {
			t.Errorf("%s in open mode: %q, want refused", dst, got)
		}
	}
	if n := len(r.refusals()); n != 4 {
		t.Errorf("%d refusals, want 4: %+v", n, r.refusals())
	}
}

// clientHello is the first flight of a real TLS client for sni.
func clientHello(t *testing.T, sni string) []byte {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake()
	buf := make([]byte, 64<<10)
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// TestRelaySharesTheProxysCap: a tunnel through the proxy and a connection through the relay
// count against the same cap; past it the relay's is closed unanswered.
func TestRelaySharesTheProxysCap(t *testing.T) {
	origin := tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		io.WriteString(c, "reached")
		io.Copy(io.Discard, c)
	})
	r := newRelayRigCap(t, 1, true, nil, "open.test:7000")
	r.fn.route("open.test", 7000, origin.Addr().String())
	ports, err := r.p.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	tunnel, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(ports), "open.test:7000", basic(User, r.p.opts.Token))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	defer tunnel.Close()
	relayed := r.dial("203.0.113.10:7000")
	defer relayed.Close()
	relayed.SetDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(relayed); len(b) != 0 {
		t.Errorf("a relayed connection past the cap read %q", b)
	}
	if n := r.p.Active(); n != 1 {
		t.Errorf("%d connections active, want the tunnel alone", n)
	}
	// Closed with the origin's greeting unread: the client's end resets.
	tunnel.Close()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if n := r.p.Active(); n != 0 {
			return fmt.Errorf("%d connections active", n)
		}
		return nil
	})
	again := r.dial("203.0.113.10:7000")
	defer again.Close()
	again.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 7)
	if _, err := io.ReadFull(again, buf); err != nil || string(buf) != "reached" {
		t.Errorf("once the tunnel closed, the relay: %q %v", buf, err)
	}
}
