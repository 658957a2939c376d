//go:build linux

package proxy

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A burst of a tunnel is copied through a buffer that the relay holds only while bytes flow.
// It starts small and moves to a large one once a read fills the small one, so a bulk
// transfer moves megabytes per system call and an interactive one holds little. (splice(2)
// would spare the copy, but the segments it sends carry a page fragment per 4 KiB, and the
// receiving program then pays more to read them than the copy costs here: measured on
// loopback, the receiver's CPU per byte doubled.)
const (
	smallBuffer = 64 << 10
	largeBuffer = 4 << 20
	// maxLarge is how many large buffers one proxy's tunnels hold at once, and
	// daemonLarge (buffers.go) all the proxies sharing a ConnLimit; other bursts make do with small
	// ones. More bulk transfers at once than this would not go faster on a few cores, and
	// each would cost its buffer (held while the sandbox does not drain it).
	maxLarge = 4
)

var (
	smallBuffers = sync.Pool{New: func() any { return new([smallBuffer]byte) }}
	largeBuffers = sync.Pool{New: func() any { return new([largeBuffer]byte) }}
)

// buffers counts a proxy's large buffers in use.
type buffers struct {
	large atomic.Int32
}

// relayIdleFree is relay for two TCP connections, holding nothing while the source is idle;
// for other connections it reports false, having done nothing.
func (t *tunnel) relayIdleFree(dst, src net.Conn) (bool, error) {
	d, ok := dst.(*net.TCPConn)
	s, ok2 := src.(*net.TCPConn)
	if !ok || !ok2 {
		return false, nil
	}
	b := &burster{t: t}
	var err error
	if b.dst, err = d.SyscallConn(); err != nil {
		return true, err
	}
	if b.src, err = s.SyscallConn(); err != nil {
		return true, err
	}
	return true, b.run()
}

// burster moves one direction of a tunnel in bursts. While the source has nothing to read it
// holds no buffer, only the poller's wait on the socket, so an idle tunnel costs its two
// sockets and two parked goroutines.
type burster struct {
	t        *tunnel
	dst, src syscall.RawConn

	buf   []byte // nil between bursts
	large bool   // buf is a large buffer
	n     int    // bytes read into buf, or peeked
	off   int    // bytes of buf[:n] written
	err   error

	// The callbacks, made once so that each call of RawConn.Read or Write allocates nothing.
	peekFn, readFn, writeFn func(fd uintptr) bool
	one                     [1]byte
}

func (b *burster) run() error {
	b.peekFn, b.readFn, b.writeFn = b.peek, b.read, b.write
	defer b.dropBuffer()
	for {
		if err := b.src.Read(b.peekFn); err != nil {
			return err
		}
		if b.err != nil || b.n == 0 {
			return b.err // the source failed, or ended
		}
		if ended, err := b.burst(); ended || err != nil {
			return err
		}
	}
}

// peek looks for a byte to read without taking it. It returns false, which has the poller
// wait for the socket, only on EAGAIN: the poller wakes on edges, so it may wait only after
// the socket was found empty.
func (b *burster) peek(fd uintptr) bool {
	for {
		n, _, err := unix.Recvfrom(int(fd), b.one[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		case nil:
			b.n, b.err = n, nil
		default:
			b.n, b.err = 0, os.NewSyscallError("recvfrom", err)
		}
		return true
	}
}

// burst copies what the source has to the destination until the source would block, and
// reports whether the source ended.
func (b *burster) burst() (bool, error) {
	b.takeBuffer()
	for {
		if err := b.src.Read(b.readFn); err != nil {
			return false, err
		}
		switch {
		case b.err == unix.EAGAIN:
			b.dropBuffer()
			return false, nil
		case b.err != nil:
			return false, os.NewSyscallError("read", b.err)
		case b.n == 0:
			return true, nil
		}
		b.t.touch()
		b.off = 0
		if err := b.dst.Write(b.writeFn); err != nil {
			return false, err
		}
		if b.err != nil {
			return false, b.err
		}
		if b.n == len(b.buf) && !b.large {
			b.growBuffer()
		}
	}
}

// read reads what the source socket has, without waiting: EAGAIN is the caller's to handle.
func (b *burster) read(fd uintptr) bool {
	for {
		n, err := unix.Read(int(fd), b.buf)
		if err != unix.EINTR {
			b.n, b.err = max(n, 0), err
			return true
		}
	}
}

// write writes buf[off:n] to the destination socket, returning false to have the poller wait
// when the socket takes no more for now.
func (b *burster) write(fd uintptr) bool {
	b.err = nil
	for b.off < b.n {
		n, err := unix.Write(int(fd), b.buf[b.off:b.n])
		if n > 0 {
			b.off += n
			b.t.touch()
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		case err != nil:
			b.err = os.NewSyscallError("write", err)
			return true
		case n == 0:
			b.err = io.ErrShortWrite
			return true
		}
	}
	return true
}

func (b *burster) takeBuffer() {
	b.buf, b.large = smallBuffers.Get().(*[smallBuffer]byte)[:], false
}

// growBuffer moves the burst to a large buffer, if the proxy has one to spare.
func (b *burster) growBuffer() {
	if b.t.bufs.large.Add(1) > maxLarge {
		b.t.bufs.large.Add(-1)
		return
	}
	if sh := b.t.shared; sh != nil && !sh.takeLarge() {
		b.t.bufs.large.Add(-1)
		return
	}
	smallBuffers.Put((*[smallBuffer]byte)(b.buf))
	b.buf, b.large = largeBuffers.Get().(*[largeBuffer]byte)[:], true
}

func (b *burster) dropBuffer() {
	switch {
	case b.buf == nil:
		return
	case b.large:
		largeBuffers.Put((*[largeBuffer]byte)(b.buf))
		b.t.bufs.large.Add(-1)
		if sh := b.t.shared; sh != nil {
			sh.giveLarge()
		}
	default:
		smallBuffers.Put((*[smallBuffer]byte)(b.buf))
	}
	b.buf, b.large = nil, false
}
