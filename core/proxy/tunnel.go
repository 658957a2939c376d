package proxy

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// chunk is how much a tunnel copies between idle checks. Copying a *net.TCPConn into
// another through an io.LimitedReader still lets the kernel splice.
const chunk = 8 << 20

var errIdle = errors.New("tunnel idle")

// pipe copies both ways between client and up until both sides are done, an error ends one,
// or neither moves for the idle timeout. A side that finishes half-closes the other, so
// protocols that end their request with a shutdown keep working.
func (p *Proxy) pipe(client, up net.Conn) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan error, 1)
	go func() {
		err := p.copyIdle(up, client, &last)
		if err == nil {
			closeWrite(up)
		}
		done <- err
	}()
	err := p.copyIdle(client, up, &last)
	if err == nil {
		closeWrite(client)
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

func (p *Proxy) copyIdle(dst, src net.Conn, last *atomic.Int64) error {
	idle := p.opts.IdleTimeout
	lr := &io.LimitedReader{R: src}
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		lr.N = chunk
		n, err := io.Copy(dst, lr)
		if n > 0 {
			last.Store(time.Now().UnixNano())
		}
		switch {
		case err == nil && lr.N > 0:
			return nil // the source ended
		case err == nil:
			continue
		case isTimeout(err) && (n > 0 || time.Since(time.Unix(0, last.Load())) < idle):
			continue // the other direction is busy, or this one moved
		case isTimeout(err):
			return errIdle
		}
		return err
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
