//go:build linux || darwin

package api

import (
	"context"
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

// connKey holds, in a request's context, the connection it came on (see withConn).
type connKey struct{}

// withConn is the local API's http.Server.ConnContext: a handler can ask who is at the other
// end of its request's connection.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// peerProgram returns the program of the process at the other end of the connection that
// ctx's request came on, as the kernel knows it, or "" where it cannot say.
func peerProgram(ctx context.Context) string {
	uc, ok := ctx.Value(connKey{}).(*net.UnixConn)
	if !ok {
		return ""
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ""
	}
	var p string
	if err := raw.Control(func(fd uintptr) { p = socketPeerProgram(int(fd)) }); err != nil {
		return ""
	}
	return p
}
