package ownaddr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// is asks the kernel for its route to a (RTM_GETROUTE, the lookup `ip route get` makes, and
// a connection from this process follows): a local, broadcast, anycast or multicast route
// delivers to this machine. The kernel keeps a local route for every address of every
// interface, up or down, so this also answers for the interfaces' addresses. One netlink
// socket per question, a round trip of a few microseconds, and no state kept between them.
func is(a netip.Addr) (bool, error) {
	t, err := routeType(a)
	if err != nil {
		return false, fmt.Errorf("asking the kernel for its route to %s: %w", a, err)
	}
	switch t {
	case unix.RTN_LOCAL, unix.RTN_BROADCAST, unix.RTN_ANYCAST, unix.RTN_MULTICAST:
		return true, nil
	}
	return false, nil
}

// routeType is the type of the kernel's route to a; RTN_UNREACHABLE where it has none.
func routeType(a netip.Addr) (uint8, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	// The kernel answers at once; a bound keeps a thread from waiting forever on a kernel
	// that does not.
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, err
	}
	addr := a.AsSlice()
	family := uint8(unix.AF_INET)
	if a.Is6() {
		family = unix.AF_INET6
	}
	attrLen := unix.SizeofRtAttr + len(addr) // 4 or 16 bytes: already aligned
	msgLen := unix.SizeofNlMsghdr + unix.SizeofRtMsg + attrLen
	req := make([]byte, msgLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(msgLen))
	ne.PutUint16(req[4:], unix.RTM_GETROUTE)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence
	rt := req[unix.SizeofNlMsghdr:]
	rt[0] = family
	rt[1] = uint8(len(addr) * 8) // destination prefix length: the one address
	at := rt[unix.SizeofRtMsg:]
	ne.PutUint16(at[0:], uint16(attrLen))
	ne.PutUint16(at[2:], unix.RTA_DST)
	copy(at[unix.SizeofRtAttr:], addr)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return parseAnswer(buf[:n])
	}
}

// parseAnswer reads the kernel's answer to one RTM_GETROUTE: the route's type, or the error
// it sent (no route at all is RTN_UNREACHABLE: a connection there fails, and reaches nothing).
func parseAnswer(b []byte) (uint8, error) {
	ne := binary.NativeEndian
	if len(b) < unix.SizeofNlMsghdr {
		return 0, errors.New("a short answer")
	}
	l := int(ne.Uint32(b[0:]))
	if l < unix.SizeofNlMsghdr || l > len(b) {
		return 0, errors.New("an answer of a wrong length")
	}
	body := b[unix.SizeofNlMsghdr:l]
	switch ne.Uint16(b[4:]) {
	case unix.NLMSG_ERROR:
		if len(body) < 4 {
			return 0, errors.New("a short error")
		}
		switch errno := unix.Errno(-int32(ne.Uint32(body))); errno {
		case unix.ENETUNREACH, unix.EHOSTUNREACH:
			return unix.RTN_UNREACHABLE, nil
		default:
			return 0, errno
		}
	case unix.RTM_NEWROUTE:
		if len(body) < unix.SizeofRtMsg {
			return 0, errors.New("a short route")
		}
		return body[7], nil // rtm_type
	}
	return 0, fmt.Errorf("an answer of type %d", ne.Uint16(b[4:]))
}
