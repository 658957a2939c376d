//go:build linux || darwin

package api

import (
	"errors"
	"net"
)

// peerUID returns the uid of the process at the other end of a Unix socket connection.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, serr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, serr = socketPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, serr
}
