// Package proxy is a session's egress proxy: the only door from a sandbox to the network. It
// speaks HTTP CONNECT and absolute-form HTTP/1.1 on loopback (or on a listener handed to it),
// admits a request only with the session's token, decides each host with the hosts package
// against an allow list that can be swapped while it runs, resolves names itself and refuses
// loopback and private destinations a name leads to, and keeps a bounded record of what it
// refused. Its relay (ServeRelay) decides, the same way, the connections of programs that
// ignore the proxy variables where the sandbox's network sends them there (Linux); elsewhere
// such a program is stopped by the sandbox profile, not here.
//
// It looks into no connection but those to the hosts of the session's stand-in logins, whose
// TLS it ends itself to put the real secret in place of the stand-in (see StandIn); every
// other connection is a tunnel it only carries.
package proxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/ownaddr"
)

// User is the user name of the proxy's Basic credentials; the password is the token.
const User = "openworker"

// Defaults of Options.
const (
	// DefaultMaxConns is a session's cap: more than any package manager or browser-like
	// client opens at once (they keep to tens), and at two descriptors a tunnel, a
	// session at its cap holds 512 of the daemon's.
	DefaultMaxConns = 256
	// DefaultIdleTimeout: a tunnel or kept-alive connection with nothing moving either way
	// for this long is closed. Long enough for a slow build step between requests; short
	// enough that forgotten connections give their places back.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultLinger: once one side of a tunnel has ended, the other has this long with
	// nothing moving before the tunnel closes.
	DefaultLinger      = 30 * time.Second
	DefaultHeadTimeout = 10 * time.Second
	DefaultDialTimeout = 30 * time.Second
	// MaxHeadBytes bounds a request's head (request line and headers); past it the answer
	// is 431.
	MaxHeadBytes = 32 << 10
	// MaxResponseHeadBytes bounds an origin's response head (status line and headers) to a
	// forwarded request; past it the client is answered 502 and the proxy reads no more.
	MaxResponseHeadBytes = 64 << 10
	// RecordSize is how many refusals are kept; older ones are only counted.
	RecordSize = 1000
)

// Resolver looks names up. *net.Resolver is one; tests pass their own to make a name resolve
// where they need it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Proxy. Token is required; the rest have defaults.
type Options struct {
	// Token is the session's secret (make one with NewToken). Every request must carry it.
	Token string
	// Allow and Denied are the first allow list and session denials.
	Allow  []hosts.Entry
	Denied []hosts.Entry
	// Resolver resolves the names of allowed hosts. Default: net.DefaultResolver.
	Resolver Resolver
	// Dial connects to an address the proxy checked ("1.2.3.4:443"). Its context is never
	// cancelled: its deadline, DialTimeout from the start, is the dial's bound, which Dial
	// must keep as net.Dialer does. Default: a net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// OnRefusal, when set, is told of every refusal as it happens (the backend's hook for
	// cards: whether and when the sandbox blocked a site). It runs on the refused
	// connection's goroutine and must not block.
	OnRefusal func(Refusal)
	// HowToAllow, when set, says how a person allows a refused site (given as host:port)
	// where the session's commands run; refusals end with it. Default: hosts.HowToAllow.
	HowToAllow func(target string) string
	// MaxConns caps the session's concurrent connections to the proxy; past it a client is
	// answered 503.
	MaxConns int
	// Shared, when set, is a cap this proxy shares with the other sessions' (see
	// ConnLimit); past it a client is answered 503 too.
	Shared *ConnLimit
	// IdleTimeout closes a tunnel or kept-alive connection with no traffic either way for
	// this long.
	IdleTimeout time.Duration
	// Linger is how long a tunnel stays once one side has ended (its end passed on to the
	// other as a half-close) with nothing moving: a client that has gone gives its places
	// back then, not after IdleTimeout.
	Linger time.Duration
	// HeadTimeout bounds reading a request's head.
	HeadTimeout time.Duration
	// DialTimeout bounds resolving and connecting to an origin.
	DialTimeout time.Duration
	// Now stamps refusals. Default: time.Now.
	Now func() time.Time
	// Forbidden are further addresses the proxy never connects to, even for an entry that
	// names them literally: the app's own local services. A loopback address here forbids
	// its port at every loopback address.
	Forbidden []netip.AddrPort
	// OwnAddr says whether an address is this machine's own, which the proxy then treats as
	// loopback: reached only through an entry that names it. It is asked at each connection.
	// Default: ownaddr.Is, the kernel's answer.
	OwnAddr func(netip.Addr) (bool, error)
	// StandIns are the session's stand-in logins: the connections to their hosts are ended
	// here, and their requests carry the real secrets in place of the stand-ins (see
	// StandIn). nil: the proxy terminates nothing.
	StandIns *StandIns
}

// rules is what a decision reads: swapped as one value so a request never sees an allow list
// from one change and denials from another.
type rules struct {
	allow, denied *hosts.List
}

// Proxy is one session's egress proxy. Make it with New, give it listeners with
// ListenLoopback or Serve, and Close it when the session ends.
type Proxy struct {
	opts   Options
	auth   string // "openworker:TOKEN", compared with what a client sends
	rules  atomic.Pointer[rules]
	record record
	active atomic.Int64
	// handshaking counts the sandbox's TLS handshakes with the proxy (see terminate) not yet
	// decided: a refusal the program's certificate check leads to is noted at their end.
	handshaking atomic.Int64
	full        atomic.Int32 // tunnels with a full origin buffer (see MaxFullBuffers)
	forbid      map[netip.AddrPort]bool
	dialer      net.Dialer
	bufs        buffers
	// standIns are Options.StandIns by host; nil for none.
	standIns *standIns
	connsWG  sync.WaitGroup
	serveWG  sync.WaitGroup // Serve loops ListenLoopback started

	mu        sync.Mutex // guards the fields below, and orders swaps with tunnel starts
	closed    bool
	listeners map[net.Listener]bool
	ownPorts  map[uint16]bool // ports the proxy listens on: never a destination on loopback
	conns     map[*conn]bool
	forwards  map[*Forward]bool
}

// NewToken returns a fresh random session token, safe to put in a URL.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported systems; a session without a secret must
		// not start.
		panic("proxy: no randomness for a session token: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// New returns a proxy for one session. It listens nowhere until ListenLoopback or Serve.
func New(opts Options) (*Proxy, error) {
	if len(opts.Token) < 16 {
		return nil, errors.New("proxy: the session token is missing or shorter than 16 characters; make one with NewToken")
	}
	for _, c := range opts.Token {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return nil, fmt.Errorf("proxy: the session token has the character %q; use letters, digits, '-' and '_' (NewToken makes one)", c)
		}
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Linger <= 0 {
		opts.Linger = DefaultLinger
	}
	if opts.HeadTimeout <= 0 {
		opts.HeadTimeout = DefaultHeadTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.OwnAddr == nil {
		opts.OwnAddr = ownaddr.Is
	}
	p := &Proxy{
		opts:      opts,
		auth:      User + ":" + opts.Token,
		forbid:    make(map[netip.AddrPort]bool),
		listeners: make(map[net.Listener]bool),
		ownPorts:  make(map[uint16]bool),
		conns:     make(map[*conn]bool),
	}
	var err error
	if p.standIns, err = newStandIns(opts.StandIns); err != nil {
		return nil, err
	}
	p.dialer.Timeout = opts.DialTimeout
	if p.opts.Dial == nil {
		p.opts.Dial = p.dialer.DialContext
	}
	for _, ap := range opts.Forbidden {
		p.forbid[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
	}
	p.rules.Store(&rules{allow: hosts.NewList(opts.Allow), denied: hosts.NewList(opts.Denied)})
	return p, nil
}

// URL is the proxy address a sandboxed program is given in HTTPS_PROXY and HTTP_PROXY.
func (p *Proxy) URL(port int) string {
	return "http://" + User + ":" + p.opts.Token + "@127.0.0.1:" + strconv.Itoa(port)
}

// SetAllowList replaces the allow list. The next request is decided by the new list; open
// tunnels and kept-alive connections to hosts it no longer admits are closed, and the others
// are untouched.
func (p *Proxy) SetAllowList(entries []hosts.Entry) {
	p.SetList(hosts.NewList(entries))
}

// AllowList is the allow list in force.
func (p *Proxy) AllowList() []hosts.Entry { return p.rules.Load().allow.Entries() }

// SetList is SetAllowList with a list built beforehand, so that a caller can build and check
// a large list before the swap and the swap itself is a pointer store and a scan of the open
// connections.
func (p *Proxy) SetList(list *hosts.List) {
	p.swap(func(r *rules) { r.allow = list })
}

// SetDenied replaces the hosts a person denied for this session. Denials win over the allow
// list; open connections to newly denied hosts are closed.
func (p *Proxy) SetDenied(entries []hosts.Entry) {
	list := hosts.NewList(entries)
	p.swap(func(r *rules) { r.denied = list })
}

func (p *Proxy) swap(change func(*rules)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := *p.rules.Load()
	change(&next)
	p.rules.Store(&next)
	for c := range p.conns {
		if t := c.target; t != nil && !c.forwarded && !p.stillAllowed(&next, t) ||
			t != nil && c.forwarded && !p.stillAllowedForward(&next, t) {
			c.closeLocked()
		}
	}
	for f := range p.forwards {
		if !f.admits(&next) {
			f.closeLocked()
		}
	}
}

// stillAllowed re-decides an open connection's destination under r, with the class its
// address had when it was connected.
func (p *Proxy) stillAllowed(r *rules, t *target) bool {
	d := hosts.Decide(r.allow, r.denied, t.host, t.port)
	if t.open && d.Why == hosts.NotOnList {
		return !t.special
	}
	return d.Allowed && (d.Literal || !t.special)
}

// Close stops accepting, ends every connection and tunnel, and waits for them to finish.
// The session's token is useless afterwards.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	var errs []error
	for l := range p.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range p.conns {
		c.closeLocked()
	}
	for f := range p.forwards {
		f.closeLocked()
	}
	p.mu.Unlock()
	p.serveWG.Wait()
	p.connsWG.Wait()
	return errors.Join(errs...)
}

// Serve accepts connections on l until l fails or the proxy is closed. It takes l over: Close
// closes it. A listener's port is never a destination on loopback.
func (p *Proxy) Serve(l net.Listener) error {
	return p.serveLoop(l, true, func(nc net.Conn) { p.accept(nc, nil, false) })
}

// ServeSocket accepts connections on l (a Unix socket in the sandbox's private tmp) until l
// fails or the proxy is closed, each carrying plain HTTP for an https site (see
// serveSocket). It takes l over: Close closes it.
func (p *Proxy) ServeSocket(l net.Listener) error {
	return p.serveLoop(l, false, func(nc net.Conn) { p.accept(nc, nil, true) })
}

// serveLoop accepts on l and hands each connection to accept; own says l's port is the
// proxy's own, never a destination on loopback.
func (p *Proxy) serveLoop(l net.Listener, own bool, accept func(net.Conn)) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	p.listeners[l] = true
	if ap, err := netip.ParseAddrPort(l.Addr().String()); err == nil && own {
		p.ownPorts[ap.Port()] = true
	}
	p.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				// Out of descriptors: wait for some to free rather than spin or give up.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("proxy: accepting on %s: %w", l.Addr(), err)
		}
		delay = 0
		accept(nc)
	}
}

// accept starts serving one client connection (relayed, when r is set; from the socket of
// plain HTTP for https sites, when socket is), or turns it away at
// the connection cap: the proxy's and the relay's connections count against the same caps.
func (p *Proxy) accept(nc net.Conn, r *Relay, socket bool) {
	c := &conn{p: p, c: nc, socket: socket}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		nc.Close()
		return
	}
	p.conns[c] = true
	p.connsWG.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.connsWG.Done()
		defer func() {
			c.close()
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
		}()
		if p.active.Add(1) > int64(p.opts.MaxConns) {
			p.active.Add(-1)
			if r == nil {
				nc.SetWriteDeadline(time.Now().Add(time.Second))
				writeError(nc, 503, "", "this session already has "+strconv.Itoa(p.opts.MaxConns)+
					" connections open through its proxy; close some and try again")
			}
			return
		}
		defer p.active.Add(-1)
		if sh := p.opts.Shared; sh != nil {
			if !sh.take() {
				if r == nil {
					nc.SetWriteDeadline(time.Now().Add(time.Second))
					writeError(nc, 503, "", "the sandbox's sessions together already have "+strconv.Itoa(sh.Max())+
						" connections open through their proxies; close some and try again")
				}
				return
			}
			defer sh.give()
		}
		switch {
		case r != nil:
			c.relay(r)
		case c.socket:
			c.serveSocket()
		default:
			c.serve()
		}
	}()
}

// Addrs returns the addresses the proxy listens at.
func (p *Proxy) Addrs() []net.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []net.Addr
	for l := range p.listeners {
		out = append(out, l.Addr())
	}
	return out
}

// Active is the number of client connections open now.
func (p *Proxy) Active() int { return int(p.active.Load()) }
