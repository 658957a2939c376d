package sandbox

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"syscall"
)

// The ports a sandbox's own listeners take on its own loopback (Linux): its proxy port is
// picked from ProxyPortLow up, and the kernel gives the relay's listener an ephemeral one
// (32768 up, a fresh network namespace's default whatever the host's is). A probe from inside
// to a port there could reach one of them, inside, and look like a connection that got out;
// ListenOutside keeps below them.
const (
	ProxyPortLow = 20000
	outsideLow   = 10000
	outsideHigh  = ProxyPortLow
)

// ListenOutside listens on the host's 127.0.0.1 at a port below those a sandbox's own
// listeners take and for which taken (nil: none) is false — the ports the caller's
// sandbox takes besides, forwarded host ports — for the direct-connection probe and the wall
// check's canary: a connection from inside that succeeds can then only be one that reached
// it. It tries random ports first, then every port of the range in turn; where all are
// taken it fails rather than let the kernel choose one that could be the sandbox's.
func ListenOutside(taken func(port int) bool) (net.Listener, error) {
	try := func(port int) (net.Listener, error) {
		if taken != nil && taken(port) {
			return nil, syscall.EADDRINUSE
		}
		return net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	}
	for range 32 {
		if ln, err := try(outsideLow + rand.IntN(outsideHigh-outsideLow)); err == nil {
			return ln, nil
		}
	}
	start := rand.IntN(outsideHigh - outsideLow)
	var last error
	for i := range outsideHigh - outsideLow {
		ln, err := try(outsideLow + (start+i)%(outsideHigh-outsideLow))
		if err == nil {
			return ln, nil
		}
		last = err
	}
	return nil, errors.Join(errors.New("every port of 127.0.0.1 from "+strconv.Itoa(outsideLow)+" to "+strconv.Itoa(outsideHigh-1)+
		" is taken or is the sandbox's own; close some servers and try again"), last)
}
