package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// forwardRig is a forwarded port without a sandbox: "inside" is a listener of this test on
// loopback, and the proxy's dials to the host's loopback at the forwarded port go to an echo
// server instead (the forwarded port is the inside listener's own, which would loop).
type forwardRig struct {
	p      *Proxy
	f      *Forward
	inside string // the inside listener's address
	port   int
	mu     sync.Mutex
	dialed []string
}

func newForwardRig(t *testing.T, allow ...string) *forwardRig {
	t.Helper()
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	r := &forwardRig{}
	p, err := New(Options{Token: NewToken(), Allow: entries(t, allow...), Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		r.mu.Lock()
		r.dialed = append(r.dialed, address)
		r.mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, echo.Addr().String())
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.p, r.inside, r.port = p, l.Addr().String(), l.Addr().(*net.TCPAddr).Port
	if r.f, err = p.Forward(l, r.port); err != nil {
		t.Fatal(err)
	}
	return r
}

// echoes connects inside and says whether a line comes back.
func echoes(t *testing.T, addr string) (bool, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false, nil
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "ping\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n", c
}

func TestForwardRelaysAnAllowedLoopbackPort(t *testing.T) {
	for _, entry := range []string{"127.0.0.1:%d", "localhost:%d"} {
		t.Run(strings.SplitN(entry, ":", 2)[0], func(t *testing.T) {
			// The entry names the port the rig picks, so the rig starts with none and
			// the list is set once the port is known.
			r := newForwardRig(t)
			r.p.SetAllowList(entries(t, fmt.Sprintf(entry, r.port)))
			if ok, _ := echoes(t, r.inside); !ok {
				t.Fatal("the forwarded connection did not reach the host's port")
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if want := "127.0.0.1:" + strconv.Itoa(r.port); len(r.dialed) != 1 || r.dialed[0] != want {
				t.Errorf("dialed %q, want the same address and port on the host (%s)", r.dialed, want)
			}
		})
	}
}

func TestForwardRefusesWhatTheListDoesNotName(t *testing.T) {
	r := newForwardRig(t, "example.com:443")
	// Not allowed (the forward was made, then its entry left: a swap would close it; here
	// it never had one), another port, or a name that is not the address.
	for _, list := range [][]string{{"example.com:443"}, {"127.0.0.1:1"}, {"*.example.com:" + strconv.Itoa(r.port)}} {
		r.p.mu.Lock()
		r.p.rules.Store(&rules{allow: newList(t, list...), denied: newList(t)})
		r.p.mu.Unlock()
		if ok, _ := echoes(t, r.inside); ok {
			t.Fatalf("list %q: a forwarded connection was relayed", list)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dialed) != 0 {
		t.Errorf("the proxy dialled %q for refused connections", r.dialed)
	}
	refused := r.p.Blocked(time.Now().Add(-time.Minute), time.Now())
	if len(refused) != 3 || refused[0].Header != BlockedByAllowlist || !strings.Contains(refused[0].Reason, "direct connection to 127.0.0.1:"+strconv.Itoa(r.port)) {
		t.Errorf("refusals recorded: %+v", refused)
	}
}

func TestForwardClosesWhenItsEntryIsRevoked(t *testing.T) {
	r := newForwardRig(t)
	entry := "127.0.0.1:" + strconv.Itoa(r.port)
	r.p.SetAllowList(entries(t, entry, "example.com:443"))
	ok, open := echoes(t, r.inside)
	if !ok {
		t.Fatal("not relayed while allowed")
	}
	r.p.SetAllowList(entries(t, "example.com:443"))
	if !r.f.Closed() {
		t.Fatal("the forward is still open after its entry was revoked")
	}
	open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(open); err != nil {
		t.Errorf("the open relay did not end at the revocation: %v", err)
	}
	if c, err := net.DialTimeout("tcp", r.inside, time.Second); err == nil {
		c.Close()
		t.Error("the forwarded port still accepts after the revocation")
	}
}

func TestForwardClosesAlone(t *testing.T) {
	r := newForwardRig(t)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := l.Addr().(*net.TCPAddr).Port
	second, err := r.p.Forward(l, other)
	if err != nil {
		t.Fatal(err)
	}
	r.p.SetAllowList(entries(t, "127.0.0.1:"+strconv.Itoa(r.port), "127.0.0.1:"+strconv.Itoa(other)))
	r.f.Close()
	if c, err := net.DialTimeout("tcp", r.inside, time.Second); err == nil {
		c.Close()
		t.Error("a closed forward still accepts")
	}
	if ok, _ := echoes(t, l.Addr().String()); !ok {
		t.Error("closing one forward stopped another")
	}
	r.p.Close()
	if !second.Closed() {
		t.Error("the proxy's Close left a forward open")
	}
}

func newList(t *testing.T, ss ...string) *hosts.List { return hosts.NewList(entries(t, ss...)) }
