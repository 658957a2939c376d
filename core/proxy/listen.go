package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

const errTooManyFiles = syscall.EMFILE

// listenAttempts bounds the search for a port free at both loopback addresses.
const listenAttempts = 50

// loopback listens for the proxy's clients. Keep-alive probes on loopback could find out
// nothing the kernel does not know already (a client that dies has its sockets closed), and
// setting them up costs every connection four system calls.
var loopback = net.ListenConfig{KeepAlive: -1}

// ListenLoopback listens at 127.0.0.1 and [::1] on one port and serves both until Close. The
// sandbox may reach "localhost" at the proxy's port, which means both addresses; holding both
// leaves no other program a way to listen at the other one for the sandbox to reach. When the
// port is taken at [::1], both are given up and another port is tried. A machine with no IPv6
// loopback has nothing another program could listen at, so there the proxy serves 127.0.0.1
// alone; ListenLoopback fails only when 127.0.0.1 cannot be had, or when [::1] exists but no
// port was free at both.
func (p *Proxy) ListenLoopback() (port int, err error) {
	var lastErr error
	for range listenAttempts {
		l4, err := loopback.Listen(context.Background(), "tcp4", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("proxy: cannot listen at 127.0.0.1 (%v); the sandbox has no network without it", err)
		}
		port = l4.Addr().(*net.TCPAddr).Port
		l6, err := loopback.Listen(context.Background(), "tcp6", fmt.Sprintf("[::1]:%d", port))
		switch {
		case err == nil:
			if err := p.serveBoth(l4, l6); err != nil {
				return 0, err
			}
			return port, nil
		case noIPv6Loopback(err):
			if err := p.serveBoth(l4); err != nil {
				return 0, err
			}
			return port, nil
		}
		l4.Close()
		lastErr = err
	}
	return 0, fmt.Errorf("proxy: found no port free at both 127.0.0.1 and [::1] in %d tries (last: %v); free some loopback ports and start the session again", listenAttempts, lastErr)
}

// noIPv6Loopback reports whether err says the machine has no ::1 at all (as opposed to the
// port being taken there).
func noIPv6Loopback(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) ||
		errors.Is(err, syscall.EPROTONOSUPPORT)
}

// serveBoth registers every listener before any serves, so that no connection is accepted
// while another of the proxy's own ports is not yet known to be off limits.
func (p *Proxy) serveBoth(ls ...net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		for _, l := range ls {
			l.Close()
		}
		return errors.New("proxy: closed; start a new session")
	}
	for _, l := range ls {
		p.listeners[l] = true
		p.ownPorts[uint16(l.Addr().(*net.TCPAddr).Port)] = true
	}
	p.mu.Unlock()
	for _, l := range ls {
		p.serveWG.Add(1)
		go func() {
			defer p.serveWG.Done()
			p.Serve(l)
		}()
	}
	return nil
}
