package sandbox

import (
	"net"
	"testing"
)

// The direct-connection probe's listener and the wall check's canary are at a port no
// listener of a sandbox's own takes on its loopback (its proxy port from ProxyPortLow, the
// relay's from the ephemeral range), nor one the caller says is taken (a forwarded port), so a
// connection from inside that succeeds is one that got out.
func TestListenOutsideKeepsClearOfTheSandboxesPorts(t *testing.T) {
	// Every port of the range but one is the caller's: the sweep after the random tries
	// finds it.
	const free = outsideLow + 4321
	for _, taken := range []func(int) bool{nil, func(p int) bool { return p != free }} {
		for range 20 {
			ln, err := ListenOutside(taken)
			if err != nil {
				if taken != nil && heldElsewhere(t, free) {
					t.Skipf("port %d is another program's here", free)
				}
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			if port < outsideLow || port >= outsideHigh || taken != nil && taken(port) {
				t.Fatalf("ListenOutside listens at %d, where a sandbox's own proxy, relay or forward may listen", port)
			}
		}
	}
	if ln, err := ListenOutside(func(int) bool { return true }); err == nil {
		ln.Close()
		t.Fatalf("ListenOutside listened at %s with every port of its range taken, instead of failing", ln.Addr())
	}
}

// heldElsewhere says whether port is held on 127.0.0.1 by someone else.
func heldElsewhere(t *testing.T, port int) bool {
	ln, err := net.Listen("tcp4", (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}).String())
	if err != nil {
		return true
	}
	ln.Close()
	return false
}
