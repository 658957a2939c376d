// Package ownaddr says whether an address is one of this machine's own: an address of any of
// its interfaces, or one its kernel routes to itself (a local route, as AnyIP setups make). A
// connection to such an address reaches the machine's services that listen on every address
// (a dev server, a database, a notebook, a debugging port), however public the address looks,
// so the proxy and the web fetch treat it as loopback.
//
// It asks the kernel at the moment of the question, never a list made earlier: an address
// the machine gains while a session runs (a new interface, a DHCP lease, a VPN) counts from
// then on. It decides nothing; hosts classifies an address, and the proxy refuses.
package ownaddr

import "net/netip"

// Is reports whether a is an address of this machine. An IPv4 address mapped into IPv6 is
// asked as the IPv4 address. An error means the kernel could not be asked: a caller that
// keeps the machine out treats the address as the machine's.
func Is(a netip.Addr) (bool, error) {
	a = a.Unmap()
	if !a.IsValid() {
		return false, nil
	}
	return is(a)
}
