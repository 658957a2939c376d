package session

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// fakeInside is a sandbox's network as a publisher sees it: the addresses its servers listen
// at, which the test sets, each served by a listener on this machine that stands in for it.
type fakeInside struct {
	mu     sync.Mutex
	listen map[netip.AddrPort]net.Listener
	dialed []netip.AddrPort
}

func (f *fakeInside) OwnNetwork() bool { return true }

func (f *fakeInside) Listening() ([]netip.AddrPort, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []netip.AddrPort
	for a := range f.listen {
		out = append(out, a)
	}
	return out, nil
}

func (f *fakeInside) DialInside(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, to)
	var ln net.Listener
	for a, l := range f.listen {
		if a.Port() == to.Port() {
			ln = l
		}
	}
	f.mu.Unlock()
	if ln == nil {
		return nil, fmt.Errorf("connecting to %s inside the sandbox: connection refused", to)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", ln.Addr().String())
}

// serve makes a server "inside" at a, answering word to every connection.
func (f *fakeInside) serve(t *testing.T, a string, word string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(word))
			c.Close()
		}
	}()
	f.mu.Lock()
	if f.listen == nil {
		f.listen = map[netip.AddrPort]net.Listener{}
	}
	f.listen[netip.MustParseAddrPort(a)] = ln
	f.mu.Unlock()
}

func (f *fakeInside) stop(a string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ap := netip.MustParseAddrPort(a)
	f.listen[ap].Close()
	delete(f.listen, ap)
}

// freePort is a port free on this machine's 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func get(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

var _ sandbox.Publisher = (*fakeInside)(nil)

// With local servers on, a port a server listens on inside is published on this machine's
// 127.0.0.1 at the same port while it listens, and said; a port that is taken here is
// published at the next free one, said with both; the core's own listeners are never
// published; taken back once nothing listens, said too.
func TestPublisherPublishesWhileSomethingListens(t *testing.T) {
	in := &fakeInside{}
	port, taken := freePort(t), freePort(t)
	blocker, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	own := freePort(t)
	p := newPublisher(in, func() []int { return []int{own} }, true, nil, nil)
	defer p.close()
	if notes := p.takeNotes(); len(notes) != 0 || len(p.list()) != 0 {
		t.Fatalf("nothing listens, yet %v %v", notes, p.list())
	}
	in.serve(t, "127.0.0.1:"+strconv.Itoa(port), "hello from inside")
	in.serve(t, "[::]:"+strconv.Itoa(taken), "the other one")
	in.serve(t, "127.0.0.1:"+strconv.Itoa(own), "the proxy")
	notes := strings.Join(p.takeNotes(), "")
	if !strings.Contains(notes, fmt.Sprintf("port %d: published on this machine at 127.0.0.1:%d while it listens", port, port)) {
		t.Errorf("notes %q do not say port %d is published at the same port", notes, port)
	}
	var other int
	for _, pb := range p.list() {
		if pb.Port == taken {
			other = pb.HostPort
		}
		if pb.Port == own {
			t.Errorf("the core's own listener was published: %+v", pb)
		}
	}
	if other == 0 || other == taken || !strings.Contains(notes, fmt.Sprintf("port %d: published on this machine at 127.0.0.1:%d (127.0.0.1:%d is taken here)", taken, other, taken)) {
		t.Errorf("the taken port: published at %d; notes %q", other, notes)
	}
	if got, err := get("127.0.0.1:" + strconv.Itoa(port)); err != nil || got != "hello from inside" {
		t.Errorf("through the published port: %q %v", got, err)
	}
	if got, err := get("127.0.0.1:" + strconv.Itoa(other)); err != nil || got != "the other one" {
		t.Errorf("through the next free port: %q %v", got, err)
	}
	in.mu.Lock()
	for _, d := range in.dialed {
		if d.Port() == uint16(taken) && d.Addr() != netip.IPv6Loopback() {
			t.Errorf("a server on [::] was dialled at %s, want [::1]", d)
		}
	}
	in.mu.Unlock()
	in.stop("127.0.0.1:" + strconv.Itoa(port))
	tstest.WaitFor(t, 5*time.Second, func() error {
		if _, err := get("127.0.0.1:" + strconv.Itoa(port)); err == nil {
			return fmt.Errorf("127.0.0.1:%d still answers after the server inside stopped", port)
		}
		return nil
	})
	if notes := strings.Join(p.takeNotes(), ""); !strings.Contains(notes, fmt.Sprintf("port %d in the sandbox is no longer published", port)) {
		t.Errorf("the end was not said: %q", notes)
	}
	p.close()
	if _, err := get("127.0.0.1:" + strconv.Itoa(other)); err == nil {
		t.Error("a published port answers after the wall ended")
	}
}

// Without local servers only the ports asked for are published, and a port asked for that
// nothing listens at is listed as not published.
func TestPublisherPublishesOnlyWhatWasAsked(t *testing.T) {
	in := &fakeInside{}
	asked, other := freePort(t), freePort(t)
	p := newPublisher(in, func() []int { return nil }, false, []int{asked}, nil)
	defer p.close()
	if l := p.list(); len(l) != 1 || l[0].Port != asked || l[0].HostPort != 0 || !l[0].Asked {
		t.Errorf("before anything listens: %+v", l)
	}
	in.serve(t, "127.0.0.1:"+strconv.Itoa(other), "not asked")
	in.serve(t, "0.0.0.0:"+strconv.Itoa(asked), "asked")
	p.takeNotes()
	if got, err := get("127.0.0.1:" + strconv.Itoa(asked)); err != nil || got != "asked" {
		t.Errorf("the port asked for: %q %v", got, err)
	}
	if _, err := get("127.0.0.1:" + strconv.Itoa(other)); err == nil {
		t.Error("a port not asked for was published")
	}
	p.want(true, nil)
	if got, err := get("127.0.0.1:" + strconv.Itoa(other)); err != nil || got != "not asked" {
		t.Errorf("with local servers switched on: %q %v", got, err)
	}
	p.want(false, nil)
	for _, port := range []int{asked, other} {
		if _, err := get("127.0.0.1:" + strconv.Itoa(port)); err == nil {
			t.Errorf("port %d still published with nothing asked", port)
		}
	}
}

// A sandbox listening on more ports than a session publishes gets publishedPorts of them, and
// says so once: its commands cannot take every port and descriptor of this machine.
func TestPublisherBoundsThePorts(t *testing.T) {
	in := &fakeInside{listen: map[netip.AddrPort]net.Listener{}}
	for i := range publishedPorts + 5 {
		in.listen[netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(40000+i))] = nil
	}
	p := newPublisher(in, func() []int { return nil }, true, nil, nil)
	defer p.close()
	notes := strings.Join(p.takeNotes(), "")
	published := 0
	for _, pb := range p.list() {
		if pb.HostPort != 0 {
			published++
		}
	}
	if published != publishedPorts || strings.Count(notes, "are not published") != 1 {
		t.Errorf("%d published; notes:\n%s", published, notes)
	}
	if again := strings.Join(p.takeNotes(), ""); strings.Contains(again, "are not published") {
		t.Errorf("said again: %s", again)
	}
}
