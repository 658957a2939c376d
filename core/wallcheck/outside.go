package wallcheck

import (
	"math/rand/v2"
	"net"
	"strconv"
)

// The ports a sandbox's own listeners take on its own loopback (Linux): its proxy port is
// picked from 20000 up, and the kernel gives the relay's listener an ephemeral one (32768 up
// by default). A direct-connection probe to a port there could reach one of them, inside,
// and look like a connection that got out.
const (
	outsideLow  = 10000
	outsideHigh = 20000
)

// ListenOutside listens on the host's 127.0.0.1 at a port below those a sandbox's own
// listeners take, for Options.DirectPort: a connection from inside that succeeds can then
// only be one that reached it. Where every try is taken it lets the kernel choose.
func ListenOutside() (net.Listener, error) {
	for range 32 {
		port := outsideLow + rand.IntN(outsideHigh-outsideLow)
		if ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp4", "127.0.0.1:0")
}
