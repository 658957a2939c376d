package proxy

import (
	"net/netip"

	"github.com/openworker/openworker/core/hosts"
)

// addrClass is the address half of a decision: hosts' class of a, or hosts.ThisMachine for an
// address that would be public but is this machine's own, asked of the kernel now, so that an
// address the machine gained since the session started counts. When the kernel cannot be
// asked, the address is taken for the machine's (fail closed) and err says why.
func (p *Proxy) addrClass(a netip.Addr) (c hosts.AddrClass, err error) {
	c = hosts.ClassifyAddr(a)
	if c != hosts.Public {
		return c, nil
	}
	own, err := p.opts.OwnAddr(a)
	if !own && err == nil {
		if v4, ok := hosts.CarriedIPv4(a.Unmap()); ok {
			// A translator on this machine would reach it with the IPv4 address.
			own, err = p.opts.OwnAddr(v4)
		}
	}
	if own || err != nil {
		return hosts.ThisMachine, err
	}
	return hosts.Public, nil
}

// whatAddr is an address's class as a refusal says it: "a loopback or private address", or
// "an address of this machine" (with why, where the kernel could not say).
func whatAddr(c hosts.AddrClass, err error) string {
	switch {
	case err != nil:
		return "taken for an address of this machine, since the kernel could not say whether it is one (" + err.Error() + ")"
	case c == hosts.ThisMachine:
		return "an address of this machine"
	}
	return "a loopback or private address"
}

// forbidden reports whether a:port is the proxy's own listening address or one of
// Options.Forbidden: never a destination, whatever the entry. On loopback (and the
// unspecified address, which connects to it, and this machine's own addresses, which reach
// what listens on every address) a forbidden port is forbidden at every address. c is a's
// class.
func (p *Proxy) forbidden(a netip.Addr, port int, c hosts.AddrClass) bool {
	ap := netip.AddrPortFrom(a, uint16(port))
	if p.forbid[ap] {
		return true
	}
	if !a.IsLoopback() && !a.IsUnspecified() && c != hosts.ThisMachine {
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
