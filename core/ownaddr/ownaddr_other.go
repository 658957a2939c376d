//go:build !linux

package ownaddr

import (
	"fmt"
	"net"
	"net/netip"
)

// is compares a with the addresses of every interface, as the system lists them now
// (getifaddrs).
func is(a netip.Addr) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("listing this machine's addresses: %w", err)
	}
	for _, ia := range addrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if b, ok := netip.AddrFromSlice(ip); ok && b.Unmap() == a {
			return true, nil
		}
	}
	return false, nil
}
