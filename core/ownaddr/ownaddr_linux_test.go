package ownaddr

import (
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOwnAddresses asks, in a network namespace of the test's own whose one interface holds
// a public IPv4 and a global IPv6 address (documentation ranges), about those, an address it
// gains afterwards, an address routed to itself, another host's on the link and one nothing
// routes to. Nothing is sent anywhere.
func TestOwnAddresses(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("making a network namespace takes root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip (iproute2) here")
	}
	ns := "owt-ownaddr-" + strconv.Itoa(os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("link", "set", "lo", "up")
	ip("link", "add", "owt0", "type", "veth", "peer", "name", "owt1")
	ip("addr", "add", "198.51.100.1/24", "dev", "owt0")
	ip("addr", "add", "2001:db8:38::1/64", "dev", "owt0", "nodad")
	ip("link", "set", "owt0", "up")
	ip("link", "set", "owt1", "up")

	inside := func(check func()) {
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Never unlocked: the thread ends with this goroutine, in the namespace.
			runtime.LockOSThread()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				t.Error(err)
				return
			}
			check()
		}()
		<-done
	}
	ask := func(want map[string]bool) {
		inside(func() {
			for a, own := range want {
				got, err := Is(netip.MustParseAddr(a))
				if err != nil || got != own {
					t.Errorf("Is(%s) = %v, %v; want %v", a, got, err, own)
				}
			}
		})
	}
	ask(map[string]bool{
		"198.51.100.1": true, "2001:db8:38::1": true, "::ffff:198.51.100.1": true,
		"127.0.0.1": true, "127.0.0.53": true, "::1": true, "198.51.100.255": true,
		"198.51.100.2": false, "2001:db8:38::2": false, // another host on the link
		"203.0.113.99": false, "192.0.2.7": false, "2001:db8:99::1": false, // nothing routes there
	})
	ip("addr", "add", "203.0.113.99/32", "dev", "owt0")
	ip("route", "add", "local", "192.0.2.0/24", "dev", "lo")
	ip("link", "set", "owt0", "down")
	ask(map[string]bool{"203.0.113.99": true, "192.0.2.7": true, "198.51.100.1": true, "198.51.100.2": false})
}

// BenchmarkIs is the cost a connection to a public address pays for the question.
func BenchmarkIs(b *testing.B) {
	a := netip.MustParseAddr("192.0.2.1")
	for b.Loop() {
		if _, err := Is(a); err != nil {
			b.Fatal(err)
		}
	}
}
