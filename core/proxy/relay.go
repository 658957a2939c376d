package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// The relay is the proxy's second door: the one a program that ignores the proxy variables
// goes through without knowing. A sandbox whose network sends every outbound TCP connection
// to a listener the relay serves (Linux: nftables in the sandbox's own network namespace) has
// each connection decided as a request through the proxy is, with the same list, denials,
// refusal record and hook, connection caps and buffers. What the relay lacks is the name: it
// has only the address the program connected to. An address the sandbox's DNS stub handed out
// stands for the name it was asked, and the stub says which; for any other address the name
// is read from the first bytes the program sends (a TLS ClientHello's server name, or a plain
// HTTP request's Host), and the address must be one of that name's own.

// Relay says how ServeRelay finds names and decides.
type Relay struct {
	// Names is the name an address the sandbox's DNS stub gave out stands for, held for the
	// connection until it calls release (the stub gives back only names no connection
	// holds); false for any other address.
	Names func(netip.Addr) (name string, release func(), ok bool)
	// Open admits every destination no denial covers, except loopback, link-local and
	// private ones, this machine's own addresses (and the other special addresses) that no
	// entry names literally: open network mode, where the internet is reachable and this
	// machine's services are not.
	Open bool
	// OriginalDst reads where a redirected connection was going. Default: the socket's
	// original destination as the kernel's connection tracking kept it (Linux).
	OriginalDst func(net.Conn) (netip.AddrPort, error)
}

// relaySniff bounds the wait for a program's first bytes when it connected to an address
// the stub did not give out. A protocol whose server speaks first (SSH banners, databases)
// sends nothing: after this the literal address alone is decided.
const relaySniff = time.Second

// maxHello bounds how much of a TLS ClientHello the relay reads for its server name: a TLS
// record's largest plaintext and its header.
const maxHello = 5 + 16<<10

// ServeRelay accepts on l the connections the sandbox's network redirected to it, until l
// fails or the proxy is closed, and carries each to its destination or refuses it. It takes
// l over: Close closes it. Its port is no destination of the proxy's own: it is the
// sandbox's network's, not this machine's.
func (p *Proxy) ServeRelay(l net.Listener, r Relay) error {
	if r.OriginalDst == nil {
		r.OriginalDst = originalDst
	}
	if r.Names == nil {
		r.Names = func(netip.Addr) (string, func(), bool) { return "", nil, false }
	}
	return p.serveLoop(l, false, func(nc net.Conn) { p.accept(nc, &r, false) })
}

// relay carries one redirected connection.
func (c *conn) relay(r *Relay) {
	c.transparent = true
	dst, err := r.OriginalDst(c.c)
	if err != nil {
		return
	}
	a := dst.Addr().Unmap()
	port := int(dst.Port())
	if a.IsLoopback() || a.IsUnspecified() || port == 0 {
		// A connection straight to the relay's own port: nothing was redirected.
		return
	}
	c.br = getReader(c.c)
	defer c.releaseReader()
	if name, release, ok := r.Names(a); ok {
		defer release()
		c.relayName(r, name, port)
		return
	}
	c.relayAddr(r, a, port)
}

// relayName carries a connection to an address that stands for name.
func (c *conn) relayName(r *Relay, name string, port int) {
	d := c.p.decideRelay(r, name, port)
	if !d.Allowed {
		c.refuseRelay(d)
		return
	}
	up, addr, special, ok := c.dial(d)
	if !ok {
		return
	}
	c.startRelay(up, d, addr, special, r.Open)
}

// relayAddr carries a connection to an address the stub did not give out: a literal in the
// program's own settings, or a name it resolved elsewhere (/etc/hosts).
func (c *conn) relayAddr(r *Relay, a netip.Addr, port int) {
	lit := a.String()
	// In open mode the address is decided as it is; otherwise by the name the client's
	// first bytes give (TLS server name, HTTP Host), where they give one.
	name := lit
	if !r.Open {
		if sniffed := c.sniffName(); sniffed != "" {
			name = sniffed
		}
	}
	d := c.p.decideRelay(r, name, port)
	if !d.Allowed {
		c.refuseRelay(d)
		return
	}
	if name == lit {
		c.dialAddr(d, a, port, r.Open)
		return
	}
	// The name is allowed; the address must be one of its own, or a program could name an
	// allowed site and reach any address with it.
	ctx, cancel := context.WithTimeout(context.Background(), c.p.opts.DialTimeout)
	found, err := c.p.opts.Resolver.LookupNetIP(ctx, "ip", d.Host)
	cancel()
	if err != nil || !containsAddr(found, a) {
		why := "it is not one of " + d.Host + "'s addresses"
		if err != nil {
			why = "the name could not be resolved (" + err.Error() + ")"
		}
		c.refuse(BlockedByAllowlist, lit, port, "a connection to "+net.JoinHostPort(lit, strconv.Itoa(port))+" named "+d.Host+
			", but "+why+"; connect by the name")
		return
	}
	c.dialAddr(d, a, port, false)
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, b := range list {
		if b.Unmap() == a {
			return true
		}
	}
	return false
}

// dialAddr connects to the address a program connected to, after the checks dial makes of
// an address a name led to.
func (c *conn) dialAddr(d hosts.Decision, a netip.Addr, port int, open bool) {
	p := c.p
	target := net.JoinHostPort(a.String(), strconv.Itoa(port))
	class, err := p.addrClass(a)
	if p.forbidden(a, port, class) {
		c.refuse(BlockedPrivateAddress, a.String(), port, target+" is one of the app's own services, which the sandbox may never reach")
		return
	}
	if !d.Literal && class.Special() {
		c.refuse(BlockedPrivateAddress, a.String(), port, target+" is "+whatAddr(class, err)+", which the sandbox reaches only when it is allowed by that address: "+
			c.p.howToAllow(target))
		return
	}
	ctx := dialContext{Context: context.Background(), deadline: time.Now().Add(p.opts.DialTimeout)}
	up, err := p.opts.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
	if err != nil {
		return
	}
	c.startRelay(up, d, a, class.Special(), open)
}

// startRelay attaches up and copies both ways, the bytes already read first.
func (c *conn) startRelay(up net.Conn, d hosts.Decision, addr netip.Addr, special, open bool) {
	c.open = open
	if !c.attach(up, d, addr, special) {
		return
	}
	if logins := c.p.standInsFor(d); logins != nil {
		c.terminate(up, d, logins)
		return
	}
	c.tunnel(up)
}

// decideRelay is hosts.Decide, and in open mode every host no denial covers.
func (p *Proxy) decideRelay(r *Relay, host string, port int) hosts.Decision {
	rules := p.rules.Load()
	d := hosts.Decide(rules.allow, rules.denied, host, port)
	if r.Open && d.Why == hosts.NotOnList {
		d.Allowed = true
	}
	return d
}

// refuseRelay records a refusal of a redirected connection. A plain HTTP request is
// answered 403 as the proxy answers one; anything else is closed.
func (c *conn) refuseRelay(d hosts.Decision) {
	if d.Why == hosts.NotValid {
		return
	}
	c.refuseList(d)
}

// sniffName reads, without consuming it, the name a program's first bytes give: a TLS
// ClientHello's server name or an HTTP request's Host. "" when they give none, or none came
// within relaySniff.
func (c *conn) sniffName() string {
	c.c.SetReadDeadline(time.Now().Add(relaySniff))
	defer c.c.SetReadDeadline(time.Time{})
	first, err := c.br.Peek(1)
	if err != nil {
		return ""
	}
	if first[0] == 0x16 {
		return c.sniffHello()
	}
	if !c.looksHTTP() {
		return ""
	}
	c.plainHTTP = true
	n, err := headLen(c.br)
	if err != nil {
		return ""
	}
	raw, _ := c.br.Peek(n)
	if _, why := parseHead(string(raw)); why != "" {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "host") {
			host := strings.TrimSpace(v)
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			return strings.Trim(host, "[]")
		}
	}
	return ""
}

// looksHTTP says the buffered bytes begin a request line: a method of capital letters and
// a space.
func (c *conn) looksHTTP() bool {
	for i := 1; i <= 8; i++ {
		b, err := c.br.Peek(i)
		if err != nil {
			return false
		}
		ch := b[i-1]
		switch {
		case ch == ' ':
			return i > 1
		case ch < 'A' || ch > 'Z':
			return false
		}
	}
	return false
}

// sniffHello reads a TLS ClientHello's server name.
func (c *conn) sniffHello() string {
	hdr, err := c.br.Peek(5)
	if err != nil {
		return ""
	}
	n := int(binary.BigEndian.Uint16(hdr[3:5]))
	if n+5 > maxHello || n+5 > c.br.Size() {
		return ""
	}
	rec, err := c.br.Peek(5 + n)
	if err != nil {
		return ""
	}
	name, _ := serverName(rec[5:])
	return name
}

// serverName finds the server_name extension in a ClientHello handshake message (the
// first record's payload; a hello split across records yields none).
func serverName(b []byte) (string, error) {
	bad := errors.New("not a ClientHello")
	r := reader(b)
	if t, ok := r.u8(); !ok || t != 1 {
		return "", bad
	}
	if _, ok := r.n(3); !ok {
		return "", bad
	}
	if _, ok := r.n(2 + 32); !ok { // version, random
		return "", bad
	}
	for _, lenBytes := range []int{1, 2, 1} { // session id, cipher suites, compression
		if _, ok := r.vec(lenBytes); !ok {
			return "", bad
		}
	}
	exts, ok := r.vec(2)
	if !ok {
		return "", bad
	}
	for len(exts) >= 4 {
		typ := binary.BigEndian.Uint16(exts)
		l := int(binary.BigEndian.Uint16(exts[2:]))
		if len(exts) < 4+l {
			return "", bad
		}
		body := exts[4 : 4+l]
		exts = exts[4+l:]
		if typ != 0 {
			continue
		}
		br := reader(body)
		list, ok := br.vec(2)
		for ok && len(list) >= 3 {
			lr := reader(list)
			kind, _ := lr.u8()
			host, ok2 := lr.vec(2)
			if !ok2 {
				break
			}
			if kind == 0 {
				return string(host), nil
			}
			list = []byte(lr)
		}
		return "", bad
	}
	return "", nil
}

// reader reads a TLS message's fields.
type reader []byte

func (r *reader) n(n int) ([]byte, bool) {
	if len(*r) < n {
		return nil, false
	}
	b := (*r)[:n]
	*r = (*r)[n:]
	return b, true
}

func (r *reader) u8() (byte, bool) {
	b, ok := r.n(1)
	if !ok {
		return 0, false
	}
	return b[0], true
}

func (r *reader) vec(lenBytes int) ([]byte, bool) {
	l, ok := r.n(lenBytes)
	if !ok {
		return nil, false
	}
	var n int
	for _, x := range l {
		n = n<<8 | int(x)
	}
	return r.n(n)
}
