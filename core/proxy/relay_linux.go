package proxy

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// soOriginalDst is SO_ORIGINAL_DST (and IP6T_SO_ORIGINAL_DST): where a connection the
// kernel's NAT redirected was going.
const soOriginalDst = 80

// originalDst reads a redirected TCP connection's original destination.
func originalDst(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, errors.New("not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	local, _ := netip.ParseAddrPort(tc.LocalAddr().String())
	var ap netip.AddrPort
	var serr error
	cerr := raw.Control(func(fd uintptr) {
		if local.Addr().Unmap().Is4() {
			var sa unix.RawSockaddrInet4
			l := uint32(unsafe.Sizeof(sa))
			serr = getsockopt(fd, unix.SOL_IP, soOriginalDst, unsafe.Pointer(&sa), &l)
			port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
			ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port)
			return
		}
		var sa unix.RawSockaddrInet6
		l := uint32(unsafe.Sizeof(sa))
		serr = getsockopt(fd, unix.SOL_IPV6, soOriginalDst, unsafe.Pointer(&sa), &l)
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port)
	})
	if cerr != nil {
		return netip.AddrPort{}, cerr
	}
	return ap, serr
}

func getsockopt(fd uintptr, level, name int, v unsafe.Pointer, l *uint32) error {
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), uintptr(name), uintptr(v), uintptr(unsafe.Pointer(l)), 0)
	if e != 0 {
		return e
	}
	return nil
}
