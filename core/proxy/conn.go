package proxy

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// X-Proxy-Error values of a refusal.
const (
	BlockedByAllowlist    = "blocked-by-allowlist"
	BlockedPrivateAddress = "blocked-private-address"
)

// notAProxyRequest answers an origin-form request: someone connected to the proxy as if it
// were a web server.
const notAProxyRequest = "this is the session's egress proxy, not a web server: send requests through it " +
	"(set HTTPS_PROXY and HTTP_PROXY to its address), which makes clients use CONNECT host:port " +
	"or GET http://host/path"

// target is where an open upstream connection leads: decided again when the list changes.
type target struct {
	host string
	port int
	addr netip.Addr
	// special: addr is one a name may not lead to (loopback, private, this machine's own),
	// as it was when the connection was made.
	special bool
	// open: a relayed connection of open network mode, admitted unless denied.
	open bool
}

// conn is one client connection and the upstream it currently uses.
type conn struct {
	p  *Proxy
	c  net.Conn
	br *bufio.Reader // from readerPool until the connection ends or its tunnel starts

	// Guarded by p.mu: written by this connection's goroutine, read by swaps and Close.
	closed bool
	up     net.Conn
	target *target
	// forwarded: the connection came in through a Forward, whose rule decides it again.
	forwarded bool

	// Only this connection's goroutine uses these, set before it attaches an upstream.
	// transparent: the connection came through the relay, from a program that does not
	// know of the proxy: it is never answered with the proxy's own HTTP errors, only closed
	// (or, for a plain HTTP request, refused with a 403). plainHTTP: its first bytes are an
	// HTTP request. open: see target.
	transparent, plainHTTP, open bool

	// Only this connection's goroutine uses these.
	upBr  *bufio.Reader
	upKey string
	// terminated names the stand-in logins of a connection the proxy terminates (see
	// terminate); "" for any other.
	terminated string
	// socket: the connection came in on the socket of plain HTTP for https sites (see
	// serveSocket).
	socket bool
	// carried: its requests are carried one by one to one host (see carry), which passes a
	// protocol switch on; switched: exchange passed one, and the connection now carries the
	// new protocol.
	carried, switched bool
}

// close ends the connection and its upstream.
func (c *conn) close() {
	c.p.mu.Lock()
	c.closeLocked()
	c.p.mu.Unlock()
}

func (c *conn) closeLocked() {
	c.closed = true
	c.c.Close()
	if c.up != nil {
		c.up.Close()
	}
}

// serve reads requests until the client goes, a request is refused, or a tunnel ends.
func (c *conn) serve() {
	c.br = getReader(c.c)
	defer c.releaseReader()
	for first := true; ; first = false {
		req, ok := c.readRequest(first)
		if !ok {
			return
		}
		if !c.authorized(req.auth) {
			writeError(c.c, http.StatusProxyAuthRequired, "",
				"this proxy needs the session's token: use the proxy address the session gave "+
					"(http://"+User+":TOKEN@127.0.0.1:PORT in HTTPS_PROXY and HTTP_PROXY)")
			return
		}
		if req.http == nil {
			c.connect(req)
			return
		}
		if !c.forward(req) {
			return
		}
	}
}

// releaseReader gives the connection's reader back to the pool.
func (c *conn) releaseReader() {
	if c.br != nil {
		putReader(c.br)
		c.br = nil
	}
}

// readRequest reads one request within the head timeout and size limit, answering the client
// itself when the head is bad. The read deadline it sets is left for whoever reads next to
// replace: a tunnel or a forwarded body.
func (c *conn) readRequest(first bool) (*request, bool) {
	if !first {
		// Between requests a kept-alive client may think for a while.
		c.c.SetReadDeadline(time.Now().Add(c.p.opts.IdleTimeout))
		if _, err := c.br.Peek(1); err != nil {
			return nil, false
		}
	}
	c.c.SetReadDeadline(time.Now().Add(c.p.opts.HeadTimeout))
	req, status, msg := readRequest(c.br)
	if req == nil {
		if status != 0 {
			writeError(c.c, status, "", msg)
		}
		return nil, false
	}
	return req, true
}

// authorized checks a Proxy-Authorization value in constant time.
func (c *conn) authorized(h string) bool {
	const prefix = "basic "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got, []byte(c.p.auth)) == 1
}

// requestTarget returns the host and port a request asks for, or the status and text to
// refuse it with.
func requestTarget(req *request) (string, int, int, string) {
	if req.http == nil {
		return connectTarget(req.target)
	}
	return forwardTarget(req.http.URL)
}

// connectTarget reads a CONNECT's target, which must be host:port and nothing else, with
// brackets around an IPv6 address and nothing else.
func connectTarget(target string) (string, int, int, string) {
	host, portText, err := net.SplitHostPort(target)
	if err != nil || strings.ContainsAny(host, "/?#@") || target[0] == '[' && !isIPv6(host) {
		return "", 0, http.StatusBadRequest, "CONNECT needs a host and port, such as CONNECT github.com:443"
	}
	return checkTarget(host, portText)
}

// isIPv6 reports whether s is an IPv6 address, the only thing brackets may hold.
func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// forwardTarget reads the target of a request to forward from its absolute-form URL.
func forwardTarget(u *url.URL) (string, int, int, string) {
	if u.Scheme == "" || u.Host == "" {
		return "", 0, http.StatusBadRequest, notAProxyRequest
	}
	if u.Scheme != "http" {
		return "", 0, http.StatusBadRequest, "the proxy forwards only http:// URLs; for " + u.Scheme + ":// use CONNECT (clients do when HTTPS_PROXY is set)"
	}
	host, portText, err := net.SplitHostPort(u.Host)
	if err != nil {
		if !strings.Contains(err.Error(), "missing port") {
			return "", 0, http.StatusBadRequest, "the request's host " + strconv.Quote(u.Host) + " is not host:port"
		}
		host, portText = strings.TrimSuffix(strings.TrimPrefix(u.Host, "["), "]"), "80"
	}
	return checkTarget(host, portText)
}

// checkTarget checks a target's port and that it names a host.
func checkTarget(host, portText string) (string, int, int, string) {
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || portText[0] == '+' || portText[0] == '-' {
		return "", 0, http.StatusBadRequest, "the request's port " + strconv.Quote(portText) + " is not a port from 1 to 65535"
	}
	if host == "" {
		return "", 0, http.StatusBadRequest, "the request names no host"
	}
	return host, port, 0, ""
}

// decide looks the request's target up and refuses it if it is not allowed.
func (c *conn) decide(req *request) (hosts.Decision, bool) {
	host, port, status, msg := requestTarget(req)
	if status != 0 {
		writeError(c.c, status, "", msg)
		return hosts.Decision{}, false
	}
	r := c.p.rules.Load()
	d := hosts.Decide(r.allow, r.denied, host, port)
	switch {
	case d.Why == hosts.NotValid:
		writeError(c.c, http.StatusBadRequest, "", d.Reason())
		return d, false
	case !d.Allowed:
		c.refuseList(d)
		return d, false
	}
	return d, true
}

// refuse records a refusal and answers it.
func (c *conn) refuse(code, host string, port int, reason string) {
	c.refuseWith(Refusal{Host: host, Port: port, Reason: reason, Header: code})
}

// refuseAt is refuse for a site that only another entry would open: allow is that entry's
// host:port (the address an allowed name led to), which the refusal's reason names too.
func (c *conn) refuseAt(code, host string, port int, allow, reason string) {
	c.refuseWith(Refusal{Host: host, Port: port, Allow: allow, Reason: reason, Header: code})
}

// refuseList refuses what the allow list, or the session's denials, do not admit (d).
func (c *conn) refuseList(d hosts.Decision) {
	c.refuseWith(Refusal{Host: d.Host, Port: d.Port, Reason: d.Explain(c.p.opts.HowToAllow), Header: BlockedByAllowlist, Denied: d.Why == hosts.Denied})
}

func (c *conn) refuseWith(ref Refusal) {
	reason, code := ref.Reason, ref.Header
	c.note(ref)
	if c.transparent && !c.plainHTTP && !c.startsHTTP() {
		return
	}
	writeError(c.c, http.StatusForbidden, code, reason)
}

// note records a refusal and tells the hook, without answering: the connection is no
// longer one to answer on in plain HTTP (its TLS was ended here), or answers itself.
func (c *conn) note(ref Refusal) {
	ref.Time = c.p.opts.Now()
	c.p.record.add(ref)
	if c.p.opts.OnRefusal != nil {
		c.p.opts.OnRefusal(ref)
	}
}

// switchAdvice says what to do instead of a protocol switch the proxy does not carry.
func (c *conn) switchAdvice() string {
	if c.carried {
		return "it switched without being asked to"
	}
	return "use https:// (CONNECT)"
}

// fail answers a client of the proxy with an error; a relayed connection is only closed.
func (c *conn) fail(status int, msg string) {
	if !c.transparent {
		writeError(c.c, status, "", msg)
	}
}

// startsHTTP says whether a relayed connection's first bytes, if they come at once, are an
// HTTP request: the program is then answered as a proxy's client would be.
func (c *conn) startsHTTP() bool {
	if c.br == nil {
		return false
	}
	if c.br.Buffered() == 0 {
		c.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		defer c.c.SetReadDeadline(time.Time{})
	}
	return c.looksHTTP()
}

// dial resolves the decided host, checks every address it leads to, and connects to one of
// those it checked. A name that leads to any address the sandbox may not reach is refused as a
// whole: a rebinding name gets no chance to have its other address tried. special says the
// address connected to is one only an entry naming it may reach (see target).
func (c *conn) dial(d hosts.Decision) (up net.Conn, addr netip.Addr, special, ok bool) {
	p := c.p
	deadline := time.Now().Add(p.opts.DialTimeout)
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(d.Host); err == nil {
		addrs = []netip.Addr{ip}
	} else if d.Literal {
		// localhost is loopback by definition; asking a resolver could only make it
		// something else.
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	} else {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		found, err := p.opts.Resolver.LookupNetIP(ctx, "ip", d.Host)
		cancel()
		if err != nil || len(found) == 0 {
			why := "it has no address"
			if err != nil {
				why = err.Error()
			}
			c.fail(http.StatusBadGateway, "the proxy could not find "+d.Target()+" ("+why+"); check the name")
			return nil, netip.Addr{}, false, false
		}
		addrs = found
	}
	specials := make([]bool, len(addrs))
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		class, err := p.addrClass(a)
		specials[i] = class.Special()
		if p.forbidden(a, d.Port, class) {
			c.refuse(BlockedPrivateAddress, d.Host, d.Port, d.Target()+" leads to "+netip.AddrPortFrom(a, uint16(d.Port)).String()+
				", the proxy's own address or one of the app's own services, which the sandbox may never reach")
			return nil, netip.Addr{}, false, false
		}
		if !d.Literal && specials[i] {
			at := netip.AddrPortFrom(a, uint16(d.Port)).String()
			c.refuseAt(BlockedPrivateAddress, d.Host, d.Port, at, d.Target()+" resolves to "+a.String()+
				", "+whatAddr(class, err)+", which the proxy does not reach through a name; to reach it, allow the address itself ("+
				at+"): "+c.p.howToAllow(at))
			return nil, netip.Addr{}, false, false
		}
	}
	var lastErr error
	ctx := dialContext{Context: context.Background(), deadline: deadline}
	for i, a := range addrs {
		up, err := p.opts.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(d.Port)).String())
		if err == nil {
			return up, a, specials[i], true
		}
		lastErr = err
	}
	c.fail(http.StatusBadGateway, "the proxy could not connect to "+d.Target()+" ("+lastErr.Error()+")")
	return nil, netip.Addr{}, false, false
}

// dialContext gives Options.Dial the dial timeout as a deadline alone. Nothing else ends a
// dial, and net.Dialer enforces a deadline with the socket's own timer, whereas a context that
// can be cancelled costs every connect a goroutine to watch it, and the dial a wait for that
// goroutine to see it done.
type dialContext struct {
	context.Context // Background: never cancelled
	deadline        time.Time
}

func (c dialContext) Deadline() (time.Time, bool) { return c.deadline, true }

// reach dials the decided target and attaches it as the connection's upstream (see dial and
// attach, which answer the client when either fails).
func (c *conn) reach(d hosts.Decision) (net.Conn, bool) {
	up, addr, special, ok := c.dial(d)
	if !ok || !c.attach(up, d, addr, special) {
		return nil, false
	}
	return up, true
}

// attach makes up the connection's upstream, unless the list changed since the decision and
// no longer admits it: deciding again here, under the lock swaps take, means no tunnel can
// slip past a revocation.
func (c *conn) attach(up net.Conn, d hosts.Decision, addr netip.Addr, special bool) bool {
	p := c.p
	t := &target{host: d.Host, port: d.Port, addr: addr, special: special, open: c.open}
	p.mu.Lock()
	if c.closed || p.closed {
		p.mu.Unlock()
		up.Close()
		return false
	}
	r := p.rules.Load()
	if !p.stillAllowed(r, t) {
		p.mu.Unlock()
		up.Close()
		c.refuseList(hosts.Decide(r.allow, r.denied, d.Host, d.Port))
		return false
	}
	if c.up != nil {
		c.up.Close()
	}
	c.up, c.target = up, t
	p.mu.Unlock()
	sizeConn(c.c, up)
	return true
}

// connect serves a CONNECT request: a tunnel to the host.
func (c *conn) connect(req *request) {
	d, ok := c.decide(req)
	if !ok {
		return
	}
	up, ok := c.reach(d)
	if !ok {
		return
	}
	c.c.SetWriteDeadline(time.Now().Add(c.p.opts.HeadTimeout))
	if _, err := io.WriteString(c.c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if logins := c.p.standInsFor(d); logins != nil {
		c.terminate(up, d, logins)
		return
	}
	c.tunnel(up)
}

// tunnel copies both ways between the client and up, the bytes already read first.
func (c *conn) tunnel(up net.Conn) {
	// The tunnel has no deadlines: its idle timer watches it (this also clears the head's).
	c.c.SetDeadline(time.Time{})
	// Bytes the client sent right behind its request (a TLS hello), or that the relay read
	// to find the name, are already buffered.
	if n := c.br.Buffered(); n > 0 {
		b, _ := c.br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	c.releaseReader() // the tunnel reads the sockets directly
	c.p.pipe(c.c, up)
}

// forward serves one absolute-form request over the connection's upstream, and reports
// whether the client connection may carry another.
func (c *conn) forward(r *request) bool {
	d, ok := c.decide(r)
	if !ok {
		return false
	}
	req := r.http
	if key := d.Target(); c.up == nil || c.upKey != key {
		up, ok := c.reach(d)
		if !ok {
			return false
		}
		c.upBr = bufio.NewReaderSize(up, MaxResponseHeadBytes)
		c.upKey = key
	}
	// The origin sees an ordinary origin-form request for the URL's host.
	req.Host = req.URL.Host
	return c.exchange(c.c, c.up, c.upBr, req, d.Target())
}

// exchange sends one request read from client to up, whose responses are read with upBr,
// and passes the response back (with any 1xx before it). It reports whether client may
// carry another request.
func (c *conn) exchange(client, up net.Conn, upBr *bufio.Reader, req *http.Request, target string) bool {
	upgrade := ""
	if c.carried && hasToken(req.Header["Connection"], "upgrade") {
		upgrade = req.Header.Get("Upgrade")
	}
	removeHopByHop(req.Header)
	if upgrade != "" {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", upgrade)
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer the client's wait here; the origin gets the body at once.
		req.Header.Del("Expect")
		if _, err := io.WriteString(client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keep Go from adding its own
	}
	deadline := time.Now().Add(c.p.opts.IdleTimeout)
	client.SetReadDeadline(deadline)
	up.SetDeadline(deadline)
	if err := req.Write(up); err != nil {
		writeError(client, http.StatusBadGateway, "", "the proxy could not send the request to "+target+" ("+err.Error()+")")
		return false
	}
	for {
		// The head is buffered whole first, within its bound: Go's reader would read any
		// length of it into memory.
		if _, err := headLenWithin(upBr, MaxResponseHeadBytes); err == errHeadTooLarge {
			writeError(client, http.StatusBadGateway, "", "the response head from "+target+" is larger than "+
				strconv.Itoa(MaxResponseHeadBytes>>10)+" KiB, so the proxy does not forward it")
			return false
		}
		resp, err := http.ReadResponse(upBr, req)
		if err != nil {
			writeError(client, http.StatusBadGateway, "", "the proxy got no valid answer from "+target+" ("+err.Error()+")")
			return false
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			to := resp.Header.Get("Upgrade")
			if upgrade == "" || to == "" || !hasToken(resp.Header["Connection"], "upgrade") {
				writeError(client, http.StatusBadGateway, "", target+" switched protocols, which the proxy does not forward here; "+c.switchAdvice())
				return false
			}
			removeHopByHop(resp.Header)
			resp.Header.Set("Connection", "Upgrade")
			resp.Header.Set("Upgrade", to)
			c.switched = resp.Write(client) == nil
			return false
		}
		removeHopByHop(resp.Header)
		if a, ok := client.(interface {
			passAnswer(*http.Response) (bool, error)
		}); ok {
			if passed, err := a.passAnswer(resp); passed {
				// The body was read past Go's reader, which is left unread and unclosed.
				if err != nil {
					return false
				}
				client.SetReadDeadline(time.Time{})
				return !resp.Close && !req.Close
			}
		}
		err = resp.Write(client)
		resp.Body.Close()
		if err != nil {
			return false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue
		}
		client.SetReadDeadline(time.Time{})
		return !resp.Close && !req.Close
	}
}

// hasToken says whether any of the comma-separated header values vs lists token.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// hopByHop are headers that concern one connection, not the request: never forwarded.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// writeError answers with status and a plain-text line, and asks the client to close.
func writeError(w net.Conn, status int, code, msg string) {
	var b strings.Builder
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	if code != "" {
		b.WriteString("X-Proxy-Error: " + code + "\r\n")
	}
	if status == http.StatusProxyAuthRequired {
		b.WriteString("Proxy-Authenticate: Basic realm=\"OpenWorker\"\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(msg)+1) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(msg + "\n")
	w.SetWriteDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(w, b.String())
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// howToAllow says how a person allows target where the session runs.
func (p *Proxy) howToAllow(target string) string {
	if p.opts.HowToAllow != nil {
		return p.opts.HowToAllow(target)
	}
	return hosts.HowToAllow
}
