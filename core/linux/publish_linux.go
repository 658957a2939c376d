package linux

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A server a command starts listens on the sandbox's own loopback, which nothing outside
// reaches. The core publishes its port on this machine's 127.0.0.1 and carries each
// connection there to it: for that it needs a socket in the sandbox's network, which only a
// process in that network can make (entering it takes capabilities an ordinary user's core
// does not have). The wall's first process makes one when the core asks, on the setup
// socket, which it keeps open for that once the runner runs (wallSetup.Sockets). It makes
// sockets and nothing else: the core connects each itself, to the sandbox's own loopback,
// and checks what it got as it checks everything from inside.

// Asks and answers on the setup socket once the runner runs: an ask is one byte, the
// family; an answer is socketMade with the socket, or why not, in words.
const (
	askSocket4 = 4
	askSocket6 = 6
	socketMade = 0
)

// serveSockets answers the core's asks for a TCP socket in the sandbox's network until the
// core hangs up. It runs behind the finished wall, as every thread of this process does.
func serveSockets(fd int) {
	defer unix.Close(fd)
	buf := make([]byte, 8)
	for {
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		af := unix.AF_INET
		switch {
		case n == 1 && buf[0] == askSocket4:
		case n == 1 && buf[0] == askSocket6:
			af = unix.AF_INET6
		default:
			if unix.Sendmsg(fd, []byte("an ask is the byte 4 or 6"), nil, nil, 0) != nil {
				return
			}
			continue
		}
		s, err := unix.Socket(af, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			if unix.Sendmsg(fd, []byte("socket: "+err.Error()), nil, nil, 0) != nil {
				return
			}
			continue
		}
		err = unix.Sendmsg(fd, []byte{socketMade}, unix.UnixRights(s), nil, 0)
		unix.Close(s)
		if err != nil {
			return
		}
	}
}

// closeSockets lets go of the setup socket: the sandbox is ending.
func (pr *process) closeSockets() {
	pr.sockMu.Lock()
	defer pr.sockMu.Unlock()
	if pr.sockets != nil {
		pr.sockets.Close()
		pr.sockets = nil
	}
}

// socketInside asks the wall's first process for a TCP socket in the sandbox's network.
// What comes back is checked: a stream socket of the family asked for, not listening.
// (Sockets asked for ahead, off a connection's way, made connections slower here: on two
// busy cores the asks ahead contend with the one that waits.)
func (pr *process) socketInside(ctx context.Context, v6 bool) (int, error) {
	pr.sockMu.Lock()
	defer pr.sockMu.Unlock()
	if pr.sockets == nil {
		return -1, errors.New("this sandbox has no network of its own")
	}
	ask, af := byte(askSocket4), unix.AF_INET
	if v6 {
		ask, af = askSocket6, unix.AF_INET6
	}
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	pr.sockets.SetDeadline(deadline)
	if _, err := pr.sockets.Write([]byte{ask}); err != nil {
		return -1, fmt.Errorf("asking the sandbox's first process for a socket: %w", err)
	}
	buf := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := pr.sockets.ReadMsgUnix(buf, oob)
	if err == nil && n == 0 {
		err = errors.New("it hung up (the sandbox is ending)")
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// An answer that comes after this would be taken for the next ask's.
			pr.sockets.Close()
			pr.sockets = nil
		}
		return -1, fmt.Errorf("asking the sandbox's first process for a socket: %w", err)
	}
	fds, err := rightsIn(oob[:oobn])
	if err != nil {
		return -1, err
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	if len(fds) != 1 || buf[0] != socketMade || n != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if n > 0 && buf[0] != socketMade {
			return -1, fmt.Errorf("the sandbox's first process made no socket: %s", bytes.ToValidUTF8(buf[:n], nil))
		}
		return -1, fmt.Errorf("the sandbox's first process answered with %d descriptors, not one socket", len(fds))
	}
	fd := fds[0]
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	listening, err3 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err := errors.Join(err1, err2, err3); err != nil || domain != af || typ != unix.SOCK_STREAM || listening != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("the sandbox's first process sent something other than a new TCP socket (%v)", err)
	}
	return fd, nil
}

// DialInside connects to a server listening at to on the sandbox's own loopback, with a
// socket made in the sandbox's network: a connection from this machine's loopback to a
// published port is carried there. Nothing but the sandbox's loopback is dialled.
func (pr *process) DialInside(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	ip := to.Addr().Unmap()
	if !ip.IsLoopback() || to.Port() == 0 {
		return nil, fmt.Errorf("%s is not an address of the sandbox's own loopback", to)
	}
	fd, err := pr.socketInside(ctx, ip.Is6())
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	var sa unix.Sockaddr
	if ip.Is4() {
		sa = &unix.SockaddrInet4{Port: int(to.Port()), Addr: ip.As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(to.Port()), Addr: ip.As16()}
	}
	// On a loopback the handshake is over when connect returns, but for a server whose
	// queue is full: the wait is bounded then (SO_SNDTIMEO bounds a blocking connect).
	wait := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(d)), time.Millisecond)
	}
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return nil, err
	}
	err = unix.Connect(fd, sa)
	if errors.Is(err, unix.EINTR) {
		// A signal (the Go runtime's own) cut the wait short; the handshake goes on.
		err = awaitConnect(fd, wait)
	}
	if errors.Is(err, unix.EINPROGRESS) {
		err = unix.ETIMEDOUT // what a timed-out blocking connect says
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s inside the sandbox: %w", to, err)
	}
	var zero unix.Timeval
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &zero); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "published-"+to.String())
	keep = true
	defer f.Close()
	return net.FileConn(f)
}

// OwnNetwork says the sandbox has a network of its own, where the wall's first process makes
// sockets when asked.
func (pr *process) OwnNetwork() bool { return pr.ownNet }

// awaitConnect waits up to wait for the connection fd started to be made, and says how it
// went.
func awaitConnect(fd int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(fds, int(max(time.Until(deadline), 0).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.ETIMEDOUT
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err == nil && soerr != 0 {
			err = unix.Errno(soerr)
		}
		return err
	}
}

// Listening are the addresses TCP servers listen at in the sandbox's network, read from its
// own /proc/net/tcp and tcp6 through its first process: its loopback's, and its every
// address's (0.0.0.0, ::), which is its loopback too.
func (pr *process) Listening() ([]netip.AddrPort, error) {
	if !pr.ownNet {
		return nil, errors.New("this sandbox has no network of its own: its servers are on this machine's loopback")
	}
	dir := pr.netDir()
	var out []netip.AddrPort
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			if name == "tcp6" && errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 in this kernel
			}
			return nil, err
		}
		ls, err := parseListening(b)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", dir, name, err)
		}
		out = append(out, ls...)
	}
	return out, nil
}

// tcpListen is the state /proc/net/tcp gives a listening socket.
const tcpListen = "0A"

// parseListening reads the listening sockets' local addresses from a /proc/net/tcp or tcp6
// table: "sl local_address rem_address st …", an address written as the kernel holds it
// (each 32-bit word in this machine's byte order, in hex) and the port in hex.
func parseListening(b []byte) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for i, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if i == 0 || len(f) < 4 || string(f[3]) != tcpListen {
			continue
		}
		host, port, ok := bytes.Cut(f[1], []byte(":"))
		if !ok {
			return nil, fmt.Errorf("line %d: local address %q", i+1, f[1])
		}
		raw, err := hex.DecodeString(string(host))
		if err != nil || len(raw) != 4 && len(raw) != 16 {
			return nil, fmt.Errorf("line %d: local address %q", i+1, f[1])
		}
		p, err := strconv.ParseUint(string(port), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("line %d: port %q", i+1, port)
		}
		// Each word was printed as a number: back to the order in memory.
		for w := 0; w < len(raw); w += 4 {
			binary.NativeEndian.PutUint32(raw[w:], binary.BigEndian.Uint32(raw[w:]))
		}
		ip, _ := netip.AddrFromSlice(raw)
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(p)))
	}
	return out, nil
}
