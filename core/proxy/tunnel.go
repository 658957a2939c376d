package proxy

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel is what the two directions of a CONNECT tunnel share.
type tunnel struct {
	client, up net.Conn
	idle       time.Duration
	linger     time.Duration // the idle timeout once one direction has ended
	last       atomic.Int64  // when bytes last moved either way, in Unix nanoseconds
	ended      atomic.Int32  // directions that ended with their source's end
	bufs       *buffers
	shared     *ConnLimit // the daemon's, when the proxy shares one

	mu      sync.Mutex // orders the idle check with the tunnel's end
	timer   *time.Timer
	stopped bool
}

// touch records that bytes moved.
func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

// checkIdle closes the tunnel if nothing moved for the idle timeout, or looks again when it
// would be. One timer per tunnel, rather than a deadline on every read and write, keeps a
// busy tunnel's bursts free of timer updates.
func (t *tunnel) checkIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	idle := t.idle
	if t.ended.Load() > 0 {
		idle = min(idle, t.linger)
	}
	at := time.Unix(0, t.last.Load()).Add(idle)
	if wait := time.Until(at); wait > 0 {
		t.timer.Reset(wait)
		return
	}
	t.client.Close()
	t.up.Close()
}

// stopIdle ends the idle checks.
func (t *tunnel) stopIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.timer.Stop()
}

// pipe copies both ways between client and up until both sides are done, an error ends one,
// or neither moves for the idle timeout. A side that finishes half-closes the other, so
// protocols that end their request with a shutdown keep working.
func (p *Proxy) pipe(client, up net.Conn) {
	sizeConn(client, up)
	defer p.growFull(client, up, FullSandboxSideBuffer)()
	t := &tunnel{client: client, up: up, idle: p.opts.IdleTimeout, linger: p.opts.Linger, bufs: &p.bufs, shared: p.opts.Shared}
	t.touch()
	t.mu.Lock()
	t.timer = time.AfterFunc(t.idle, t.checkIdle)
	t.mu.Unlock()
	defer t.stopIdle()
	done := make(chan error, 1)
	go func() {
		err := t.relay(up, client)
		if err == nil {
			t.endWrite(up)
		} else {
			// A client that reset its end (closed with bytes unread) is gone: the other
			// direction, waiting on the origin, must not hold the tunnel until the idle
			// timeout.
			client.Close()
			up.Close()
		}
		done <- err
	}()
	err := t.relay(client, up)
	if err == nil {
		t.endWrite(client)
	} else {
		// Unblock the other direction.
		client.Close()
		up.Close()
	}
	if err := <-done; err != nil {
		client.Close()
		up.Close()
	}
}

// endWrite passes the end of one direction on to dst. Only the first direction to end needs
// to: the connection closes both sockets once the second ends, which says the same.
func (t *tunnel) endWrite(dst net.Conn) {
	if t.ended.Add(1) == 1 {
		closeWrite(dst)
		// From now on the other side has only the linger: a client that has gone must not
		// hold its places until the idle timeout.
		t.mu.Lock()
		if !t.stopped {
			t.timer.Reset(t.linger)
		}
		t.mu.Unlock()
	}
}

// relay copies src to dst until src ends (nil) or an error, such as the tunnel closing.
func (t *tunnel) relay(dst, src net.Conn) error {
	if handled, err := t.relayIdleFree(dst, src); handled {
		return err
	}
	return t.copy(dst, src)
}

// copy is relay with io.Copy, for connections relayIdleFree does not take.
func (t *tunnel) copy(dst, src net.Conn) error {
	_, err := io.Copy(dst, activity{src, t})
	return err
}

// activity reads through to a tunnel's source, recording that bytes moved.
type activity struct {
	r io.Reader
	t *tunnel
}

func (a activity) Read(b []byte) (int, error) {
	n, err := a.r.Read(b)
	if n > 0 {
		a.t.touch()
	}
	return n, err
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
