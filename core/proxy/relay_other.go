//go:build !linux

package proxy

import (
	"errors"
	"net"
	"net/netip"
)

// originalDst: only Linux sandboxes redirect connections to the relay.
func originalDst(net.Conn) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New("no transparent relay on this platform")
}
