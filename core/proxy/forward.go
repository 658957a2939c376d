package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// Forward relays one forwarded port: connections accepted on a listener inside the
// sandbox's own network go to the host's loopback at the address and port the client
// connected to. It is how a program that never uses a proxy for loopback (Go's HTTP client,
// a database client) reaches a host service the person allowed by its literal address
// (127.0.0.1:5432, [::1]:5432, localhost:5432).
//
// The proxy decides each connection as it decides a CONNECT to that address, against the
// allow list and the session's denials: a refusal is recorded like any other (and the client's
// connection closed), an accepted connection is counted and capped with the proxy's own,
// and it is closed when the list stops admitting it. When no loopback address at the port is
// admitted any more, the forward itself closes, and inside the port refuses connections.
type Forward struct {
	p    *Proxy
	l    net.Listener
	port int
	// Guarded by p.mu.
	closed bool
	conns  map[*conn]bool
}

// Forward starts relaying connections accepted on l, a listener inside the sandbox's network
// at port, to the host's loopback at the same port. It takes l over: Close, the proxy's Close
// and a swap that no longer admits the port close it.
func (p *Proxy) Forward(l net.Listener, port int) (*Forward, error) {
	if port < 1 || port > 65535 {
		l.Close()
		return nil, errors.New("proxy: a forwarded port is 1 to 65535, got " + strconv.Itoa(port))
	}
	f := &Forward{p: p, l: l, port: port, conns: map[*conn]bool{}}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return nil, errors.New("proxy: closed; start a new session")
	}
	if p.forwards == nil {
		p.forwards = map[*Forward]bool{}
	}
	p.forwards[f] = true
	p.serveWG.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.serveWG.Done()
		f.serve()
	}()
	return f, nil
}

// Port is the forwarded port.
func (f *Forward) Port() int { return f.port }

// Close stops the forward: inside, its port refuses connections from now on, and every
// connection it relays is closed.
func (f *Forward) Close() error {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	f.closeLocked()
	return nil
}

func (f *Forward) closeLocked() {
	if f.closed {
		return
	}
	f.closed = true
	f.l.Close()
	for c := range f.conns {
		c.closeLocked()
	}
	delete(f.p.forwards, f)
}

// Closed reports whether the forward has stopped.
func (f *Forward) Closed() bool {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	return f.closed
}

func (f *Forward) serve() {
	var delay time.Duration
	for {
		nc, err := f.l.Accept()
		if err != nil {
			if f.Closed() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			f.Close()
			return
		}
		delay = 0
		f.accept(nc)
	}
}

// loopbackOf is the loopback address a client inside connected to, as the host knows it.
func loopbackOf(a net.Addr) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	ip := ap.Addr().Unmap()
	return ip, ip.IsLoopback()
}

// decideForward decides a connection to the host's ip at port: the entry must name the
// address itself, or localhost, which is 127.0.0.1 and ::1 only (as the proxy reads it): the
// rest of 127.0.0.0/8 (a DNS stub on 127.0.0.53, a second server) is named by its address.
func (p *Proxy) decideForward(r *rules, ip netip.Addr, port int) hosts.Decision {
	d := hosts.Decide(r.allow, r.denied, ip.String(), port)
	if d.Allowed && d.Literal {
		return d
	}
	localhost := ip == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || ip == netip.IPv6Loopback()
	if l := hosts.Decide(r.allow, r.denied, "localhost", port); localhost && l.Allowed && l.Literal {
		return l
	}
	if d.Allowed {
		// On the list by a name that is not the address (never so for a loopback one, but
		// the rule is the proxy's: only an entry naming the address reaches it).
		d.Allowed, d.Why = false, hosts.NotOnList
	}
	return d
}

// admits reports whether r still admits some loopback address at the forward's port.
func (f *Forward) admits(r *rules) bool {
	for _, ip := range []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
		if f.p.decideForward(r, ip, f.port).Allowed {
			return true
		}
	}
	// An entry for another address of 127/8 keeps the forward too.
	for _, e := range r.allow.Entries() {
		if e.Port == f.port && e.IP.IsValid() && e.IP.IsLoopback() && f.p.decideForward(r, e.IP, f.port).Allowed {
			return true
		}
	}
	return false
}

// accept decides and relays one connection.
func (f *Forward) accept(nc net.Conn) {
	p := f.p
	ip, ok := loopbackOf(nc.LocalAddr())
	if !ok {
		nc.Close()
		return
	}
	c := &conn{p: p, c: nc}
	p.mu.Lock()
	if f.closed || p.closed {
		p.mu.Unlock()
		nc.Close()
		return
	}
	p.conns[c] = true
	f.conns[c] = true
	p.connsWG.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.connsWG.Done()
		defer func() {
			c.close()
			p.mu.Lock()
			delete(p.conns, c)
			delete(f.conns, c)
			p.mu.Unlock()
		}()
		if p.active.Add(1) > int64(p.opts.MaxConns) {
			p.active.Add(-1)
			return
		}
		defer p.active.Add(-1)
		// A forwarded connection holds two of the daemon's descriptors, as a tunnel does.
		if sh := p.opts.Shared; sh != nil {
			if !sh.take() {
				return
			}
			defer sh.give()
		}
		f.relay(c, ip)
	}()
}

func (f *Forward) relay(c *conn, ip netip.Addr) {
	p := f.p
	dest := net.JoinHostPort(ip.String(), strconv.Itoa(f.port))
	d := p.decideForward(p.rules.Load(), ip, f.port)
	if !d.Allowed {
		p.record.add(Refusal{Host: ip.String(), Port: f.port, Time: p.opts.Now(), Header: BlockedByAllowlist, Denied: d.Why == hosts.Denied,
			Reason: "a direct connection to " + dest + " inside the sandbox: " + d.Reason()})
		return
	}
	if p.forbidden(ip, f.port, hosts.ClassifyAddr(ip)) {
		p.record.add(Refusal{Host: ip.String(), Port: f.port, Time: p.opts.Now(), Header: BlockedPrivateAddress,
			Reason: dest + " is the proxy's own address or one of the app's own services, which the sandbox may never reach"})
		return
	}
	ctx := dialContext{Context: context.Background(), deadline: time.Now().Add(p.opts.DialTimeout)}
	up, err := p.opts.Dial(ctx, "tcp", dest)
	if err != nil {
		// As the host's port would answer a client there: nothing listens, or it is gone.
		return
	}
	t := &target{host: d.Host, port: f.port, addr: ip}
	p.mu.Lock()
	if c.closed || f.closed || p.closed || !p.stillAllowedForward(p.rules.Load(), t) {
		p.mu.Unlock()
		up.Close()
		return
	}
	c.up, c.target, c.forwarded = up, t, true
	p.mu.Unlock()
	p.pipe(c.c, up)
}

// stillAllowedForward re-decides a forwarded connection's destination under r.
func (p *Proxy) stillAllowedForward(r *rules, t *target) bool {
	return p.decideForward(r, t.addr, t.port).Allowed
}
