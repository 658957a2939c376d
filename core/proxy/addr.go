package proxy

import (
	"net/netip"

	"github.com/openworker/openworker/core/hosts"
)

// special reports whether a is an address the proxy reaches only for an entry that names it:
// loopback, unspecified, link-local, private, shared (CGNAT), multicast, reserved, or any of
// those wrapped in IPv6. The classification is hosts', shared with the web fetch.
func special(a netip.Addr) bool { return hosts.ClassifyAddr(a).Special() }

// forbidden reports whether a:port is the proxy's own listening address or one of
// Options.Forbidden: never a destination, whatever the entry. On loopback (and the
// unspecified address, which connects to it) a forbidden port is forbidden at every address.
func (p *Proxy) forbidden(a netip.Addr, port int) bool {
	ap := netip.AddrPortFrom(a, uint16(port))
	if p.forbid[ap] {
		return true
	}
	if !a.IsLoopback() && !a.IsUnspecified() {
		return false
	}
	if p.forbid[netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port))] ||
		p.forbid[netip.AddrPortFrom(netip.IPv6Loopback(), uint16(port))] {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ownPorts[uint16(port)]
}
