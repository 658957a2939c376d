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
}

// conn is one client connection and the upstream it currently uses.
type conn struct {
	p   *Proxy
	c   net.Conn
	lim limitReader
	br  *bufio.Reader

	// Guarded by p.mu: written by this connection's goroutine, read by swaps and Close.
	closed bool
	up     net.Conn
	target *target

	// Only this connection's goroutine uses these.
	upBr  *bufio.Reader
	upKey string
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
	c.lim = limitReader{r: c.c, budget: -1}
	c.br = bufio.NewReaderSize(&c.lim, 4096)
	for first := true; ; first = false {
		req, ok := c.readRequest(first)
		if !ok {
			return
		}
		if !c.authorized(req) {
			writeError(c.c, http.StatusProxyAuthRequired, "",
				"this proxy needs the session's token: use the proxy address the session gave "+
					"(http://"+User+":TOKEN@127.0.0.1:PORT in HTTPS_PROXY and HTTP_PROXY)")
			return
		}
		if req.Method == http.MethodConnect {
			c.connect(req)
			return
		}
		if !c.forward(req) {
			return
		}
	}
}

// readRequest reads one request head within the head timeout and size limit, answering the
// client itself when the head is bad.
func (c *conn) readRequest(first bool) (*http.Request, bool) {
	if !first {
		// Between requests a kept-alive client may think for a while.
		c.c.SetReadDeadline(time.Now().Add(c.p.opts.IdleTimeout))
		if _, err := c.br.Peek(1); err != nil {
			return nil, false
		}
	}
	c.c.SetReadDeadline(time.Now().Add(c.p.opts.HeadTimeout))
	req, status, msg := readHead(c.br, &c.lim)
	if req == nil {
		if status != 0 {
			writeError(c.c, status, "", msg)
		}
		return nil, false
	}
	c.c.SetReadDeadline(time.Time{})
	return req, true
}

// readHead reads a request head from br, which reads through lim, and allows at most
// MaxHeadBytes of head. It returns the request, or the status and text to answer with (status
// 0: say nothing, the client went away). The body, if any, is left to read from br.
func readHead(br *bufio.Reader, lim *limitReader) (*http.Request, int, string) {
	// Allow reading the head plus what the buffer may hold past it; the exact head length
	// is checked after parsing, from what was consumed.
	start := lim.n - int64(br.Buffered())
	lim.budget = MaxHeadBytes + int64(br.Size()) - int64(br.Buffered())
	lim.exceeded = false
	req, err := http.ReadRequest(br)
	head := lim.n - int64(br.Buffered()) - start
	lim.budget = -1
	tooLarge := "the request head is larger than " + strconv.Itoa(MaxHeadBytes>>10) + " KiB; send fewer or shorter headers"
	switch {
	case lim.exceeded || err == nil && head > MaxHeadBytes:
		return nil, http.StatusRequestHeaderFieldsTooLarge, tooLarge
	case err == nil:
		return req, 0, ""
	case head == 0 && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)):
		return nil, 0, ""
	case isTimeout(err):
		return nil, http.StatusRequestTimeout, "the request head did not arrive within the time allowed; send the whole request at once"
	}
	return nil, http.StatusBadRequest, "the request could not be read (" + err.Error() + "); " + notAProxyRequest
}

// authorized checks Proxy-Authorization in constant time.
func (c *conn) authorized(req *http.Request) bool {
	h := req.Header.Get("Proxy-Authorization")
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
func requestTarget(req *http.Request) (string, int, int, string) {
	authority := req.URL.Host
	defaultPort := ""
	if req.Method == http.MethodConnect {
		if authority == "" || req.URL.Path != "" || req.URL.Scheme != "" {
			return "", 0, http.StatusBadRequest, "CONNECT needs a host and port, such as CONNECT github.com:443"
		}
	} else {
		if req.URL.Scheme == "" || authority == "" {
			return "", 0, http.StatusBadRequest, notAProxyRequest
		}
		if req.URL.Scheme != "http" {
			return "", 0, http.StatusBadRequest, "the proxy forwards only http:// URLs; for " + req.URL.Scheme + ":// use CONNECT (clients do when HTTPS_PROXY is set)"
		}
		defaultPort = "80"
	}
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		if defaultPort == "" || !strings.Contains(err.Error(), "missing port") {
			return "", 0, http.StatusBadRequest, "the request's host " + strconv.Quote(authority) + " is not host:port"
		}
		host, portText = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]"), defaultPort
	}
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
func (c *conn) decide(req *http.Request) (hosts.Decision, bool) {
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
		c.refuse(BlockedByAllowlist, d.Host, d.Port, d.Reason())
		return d, false
	}
	return d, true
}

// refuse records a refusal and answers it.
func (c *conn) refuse(code, host string, port int, reason string) {
	c.p.record.add(Refusal{Host: host, Port: port, Time: c.p.opts.Now(), Reason: reason, Header: code})
	writeError(c.c, http.StatusForbidden, code, reason)
}

// dial resolves the decided host, checks every address it leads to, and connects to one of
// those it checked. A name that leads to any address the sandbox may not reach is refused as a
// whole: a rebinding name gets no chance to have its other address tried.
func (c *conn) dial(d hosts.Decision) (net.Conn, netip.Addr, bool) {
	p := c.p
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(d.Host); err == nil {
		addrs = []netip.Addr{ip}
	} else if d.Literal {
		// localhost is loopback by definition; asking a resolver could only make it
		// something else.
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	} else {
		found, err := p.opts.Resolver.LookupNetIP(ctx, "ip", d.Host)
		if err != nil || len(found) == 0 {
			why := "it has no address"
			if err != nil {
				why = err.Error()
			}
			writeError(c.c, http.StatusBadGateway, "", "the proxy could not find "+d.Target()+" ("+why+"); check the name")
			return nil, netip.Addr{}, false
		}
		addrs = found
	}
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		if p.forbidden(a, d.Port) {
			c.refuse(BlockedPrivateAddress, d.Host, d.Port, d.Target()+" leads to "+netip.AddrPortFrom(a, uint16(d.Port)).String()+
				", the proxy's own address or one of the app's own services, which the sandbox may never reach")
			return nil, netip.Addr{}, false
		}
		if !d.Literal && special(a) {
			c.refuse(BlockedPrivateAddress, d.Host, d.Port, d.Target()+" resolves to "+a.String()+
				", a loopback or private address, which the proxy does not reach through a name; to reach it, allow the address itself ("+
				net.JoinHostPort(a.String(), strconv.Itoa(d.Port))+") for this session or in Settings ▸ Sandbox ▸ Choose sites…")
			return nil, netip.Addr{}, false
		}
	}
	var lastErr error
	for _, a := range addrs {
		up, err := p.opts.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(d.Port)).String())
		if err == nil {
			return up, a, true
		}
		lastErr = err
	}
	writeError(c.c, http.StatusBadGateway, "", "the proxy could not connect to "+d.Target()+" ("+lastErr.Error()+")")
	return nil, netip.Addr{}, false
}

// attach makes up the connection's upstream, unless the list changed since the decision and
// no longer admits it: deciding again here, under the lock swaps take, means no tunnel can
// slip past a revocation.
func (c *conn) attach(up net.Conn, d hosts.Decision, addr netip.Addr) bool {
	p := c.p
	t := &target{host: d.Host, port: d.Port, addr: addr}
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
		now := hosts.Decide(r.allow, r.denied, d.Host, d.Port)
		c.refuse(BlockedByAllowlist, d.Host, d.Port, now.Reason())
		return false
	}
	if c.up != nil {
		c.up.Close()
	}
	c.up, c.target = up, t
	p.mu.Unlock()
	return true
}

// connect serves a CONNECT request: a tunnel to the host.
func (c *conn) connect(req *http.Request) {
	d, ok := c.decide(req)
	if !ok {
		return
	}
	up, addr, ok := c.dial(d)
	if !ok {
		return
	}
	if !c.attach(up, d, addr) {
		return
	}
	c.c.SetWriteDeadline(time.Now().Add(c.p.opts.HeadTimeout))
	if _, err := io.WriteString(c.c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	c.c.SetWriteDeadline(time.Time{})
	// Bytes the client sent right behind its request (a TLS hello) are already buffered.
	if n := c.br.Buffered(); n > 0 {
		b, _ := c.br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	c.br = nil // the tunnel reads the sockets directly; let the buffer go
	c.p.pipe(c.c, up)
}

// forward serves one absolute-form request over the connection's upstream, and reports
// whether the client connection may carry another.
func (c *conn) forward(req *http.Request) bool {
	d, ok := c.decide(req)
	if !ok {
		return false
	}
	if key := d.Target(); c.up == nil || c.upKey != key {
		up, addr, ok := c.dial(d)
		if !ok {
			return false
		}
		if !c.attach(up, d, addr) {
			return false
		}
		c.upBr = bufio.NewReader(up)
		c.upKey = key
	}
	up := c.up
	// The origin sees an ordinary origin-form request for the URL's host.
	req.Host = req.URL.Host
	removeHopByHop(req.Header)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer the client's wait here; the origin gets the body at once.
		req.Header.Del("Expect")
		if _, err := io.WriteString(c.c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keep Go from adding its own
	}
	deadline := time.Now().Add(c.p.opts.IdleTimeout)
	c.c.SetReadDeadline(deadline)
	up.SetDeadline(deadline)
	if err := req.Write(up); err != nil {
		writeError(c.c, http.StatusBadGateway, "", "the proxy could not send the request to "+d.Target()+" ("+err.Error()+")")
		return false
	}
	for {
		resp, err := http.ReadResponse(c.upBr, req)
		if err != nil {
			writeError(c.c, http.StatusBadGateway, "", "the proxy got no valid answer from "+d.Target()+" ("+err.Error()+")")
			return false
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			writeError(c.c, http.StatusBadGateway, "", d.Target()+" switched protocols, which the proxy does not forward for http:// URLs; use https:// (CONNECT)")
			return false
		}
		removeHopByHop(resp.Header)
		err = resp.Write(c.c)
		resp.Body.Close()
		if err != nil {
			return false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue
		}
		c.c.SetReadDeadline(time.Time{})
		return !resp.Close && !req.Close
	}
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

// limitReader counts what is read through it and, while budget ≥ 0, stops at budget.
type limitReader struct {
	r        io.Reader
	n        int64
	budget   int64
	exceeded bool
}

var errHeadTooLarge = errors.New("request head too large")

func (l *limitReader) Read(b []byte) (int, error) {
	if l.budget >= 0 {
		if l.budget == 0 {
			l.exceeded = true
			return 0, errHeadTooLarge
		}
		if int64(len(b)) > l.budget {
			b = b[:l.budget]
		}
	}
	n, err := l.r.Read(b)
	l.n += int64(n)
	if l.budget >= 0 {
		l.budget -= int64(n)
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
