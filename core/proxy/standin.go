package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// A stand-in login keeps its secret outside the sandbox: inside, its files hold a stand-in of
// the same shape, worthless anywhere. For exactly the hosts such a login is bound to, and
// nowhere else, the proxy (and the relay) end the sandbox's TLS connection themselves with a
// certificate of the machine's own CA, read each HTTP/1.1 request, put the real secret in place
// of the stand-in where the login sends it (an Authorization header: Bearer, token or Basic,
// which is also git's), and send the request on over a TLS connection of their own to the
// real host, whose certificate they verify as a client in the sandbox would have. A stand-in
// sent anywhere else leaves as it is: the proxy never looks into those connections.

// X-Proxy-Error values and refusal headers of connections to a stand-in login's host.
const (
	// StandInNotTrusted: the program did not trust the certificate the proxy showed for a
	// stand-in login's host (or spoke no TLS, or only HTTP/2).
	StandInNotTrusted = "stand-in-not-trusted"
	// StandInNotSigned: a request signed with an AWS login's stand-in that the proxy could
	// not check, or does not sign again (see resign); nothing was sent.
	StandInNotSigned = "stand-in-not-signed"
	// BlockedBadCertificate: the real host's certificate did not verify.
	BlockedBadCertificate = "blocked-bad-certificate"
)

// StandIn is one stand-in login's secret for one host.
type StandIn struct {
	Login string // the login's name ("gh"), for refusals and the audit trail
	// Host and Port are where the login is bound: the real secret goes there and nowhere else.
	Host string
	Port int
	// StandIn is what the sandbox holds; Real is what the request carries to Host instead.
	StandIn, Real string
	// Roots, when set, are the only authorities Host's certificate is verified with (a
	// cluster's own CA), in place of StandIns.Roots; ServerName, when set, is the name that
	// certificate gives, in place of Host. Every login bound to one host must agree on them.
	Roots      *x509.CertPool
	ServerName string
	// ClientCert, for a login that signs in with a client certificate (a cluster's user),
	// is the real one, shown to Host on a connection whose program showed the proxy the
	// stand-in certificate StandInCert (DER); such a login has no StandIn or Real.
	ClientCert  *tls.Certificate
	StandInCert []byte
	// SigV4, for an AWS login, are its keys: a request signed with the access key and the
	// stand-in secret is signed again with the real one (see resign). Such a login has no
	// StandIn or Real, and may be bound to a wildcard (*.amazonaws.com): its secret never
	// travels, only signatures of the requests the sandbox makes.
	SigV4 *SigV4
}

// StandIns are a session's stand-in logins and what the proxy needs to put their secrets on
// requests.
type StandIns struct {
	Logins []StandIn
	// Certificate returns the certificate shown to the sandbox for host, signed by the CA
	// its programs are given to trust.
	Certificate func(host string) (*tls.Certificate, error)
	// Roots verify the real hosts' certificates; nil: the system's, as a program in the
	// sandbox would verify them.
	Roots *x509.CertPool
	// Substituted, when set, is told of each request on which a login's stand-in was
	// replaced, and of each connection shown a login's real client certificate: the login
	// and the host, never the secret. It runs on one of the connection's goroutines.
	Substituted func(login, host string)
	// WayOut, when set, says how the person shares login by copying it instead, for a
	// program that cannot trust the CA; refusals end with it.
	WayOut func(login string) string
}

// standIns is StandIns indexed by host:port, and the AWS logins bound to wildcards.
type standIns struct {
	StandIns
	byTarget map[string][]StandIn
	wild     []wildStandIn
}

type wildStandIn struct {
	e hosts.Entry
	l StandIn
}

func newStandIns(s *StandIns) (*standIns, error) {
	if s == nil || len(s.Logins) == 0 {
		return nil, nil
	}
	if s.Certificate == nil {
		return nil, errors.New("proxy: stand-in logins need a certificate for their hosts (StandIns.Certificate)")
	}
	out := &standIns{StandIns: *s, byTarget: map[string][]StandIn{}}
	for _, l := range s.Logins {
		e, err := hosts.Parse(net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		switch {
		case err != nil:
			return nil, fmt.Errorf("proxy: the %s login's host %s:%d: %w", l.Login, l.Host, l.Port, err)
		case l.SigV4 != nil:
			if err := checkSigV4(l.SigV4); err != nil {
				return nil, fmt.Errorf("proxy: the %s login on %s: %w", l.Login, l.Host, err)
			}
			if e.Wildcard {
				l.Host = e.Host
				out.wild = append(out.wild, wildStandIn{e, l})
				continue
			}
		case e.Wildcard:
			return nil, fmt.Errorf("proxy: the %s login's host %s is a wildcard; a stand-in is bound to named hosts", l.Login, l.Host)
		case l.ClientCert != nil:
			if len(l.StandInCert) == 0 || len(l.ClientCert.Certificate) == 0 || bytes.Equal(l.StandInCert, l.ClientCert.Certificate[0]) {
				return nil, fmt.Errorf("proxy: the %s login on %s has no stand-in certificate distinct from its own", l.Login, l.Host)
			}
		case l.StandIn == "" || l.Real == "" || l.StandIn == l.Real:
			return nil, fmt.Errorf("proxy: the %s login on %s has no stand-in distinct from its secret", l.Login, l.Host)
		}
		l.Host = e.Host
		key := e.String()
		for _, o := range out.byTarget[key] {
			if o.ServerName != l.ServerName || (o.Roots == nil) != (l.Roots == nil) || o.Roots != nil && !o.Roots.Equal(l.Roots) {
				return nil, fmt.Errorf("proxy: the %s and %s logins would have %s verified two ways (each brings its own authority or name)", o.Login, l.Login, key)
			}
		}
		out.byTarget[key] = append(out.byTarget[key], l)
	}
	return out, nil
}

// upstream is the TLS configuration of the proxy's own connection to d's real host, for the
// logins bound there (none, on the socket for another host): verified with their authority
// and name if they bring them, else the proxy's roots and the host's name.
func (p *Proxy) upstream(d hosts.Decision, logins []StandIn) *tls.Config {
	cfg := &tls.Config{
		ServerName: d.Host,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	}
	if p.standIns != nil {
		cfg.RootCAs = p.standIns.Roots
	}
	if len(logins) > 0 {
		if logins[0].Roots != nil {
			cfg.RootCAs = logins[0].Roots
		}
		if logins[0].ServerName != "" {
			cfg.ServerName = logins[0].ServerName
		}
	}
	return cfg
}

// standInsFor are the stand-in logins bound to the decided target, nil for none: the only
// connections the proxy terminates.
func (p *Proxy) standInsFor(d hosts.Decision) []StandIn {
	if p.standIns == nil {
		return nil
	}
	host := strings.ToLower(d.Host)
	ls := p.standIns.byTarget[net.JoinHostPort(host, strconv.Itoa(d.Port))]
	for _, w := range p.standIns.wild {
		if w.e.Port == d.Port && strings.HasSuffix(host, "."+w.e.Host) {
			ls = append(slices.Clip(ls), w.l)
		}
	}
	return ls
}

// loginNames names the logins of ls, once each: "gh", "gh and npm".
func loginNames(ls []StandIn) string {
	var names []string
	for _, l := range ls {
		if !slices.Contains(names, l.Login) {
			names = append(names, l.Login)
		}
	}
	return strings.Join(names, " and ")
}

// bufferedConn reads through the reader that holds what was read of the connection so far
// (a TLS hello behind a CONNECT, or the bytes the relay looked at).
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// terminate serves a connection to a stand-in login's host over up: TLS with the sandbox,
// TLS with the real host, and the requests between them, each with the login's secret in
// place of its stand-in.
func (c *conn) terminate(up net.Conn, d hosts.Decision, logins []StandIn) {
	p := c.p
	c.c.SetDeadline(time.Time{})
	names := loginNames(logins)
	c.terminated = names
	batch := &batchConn{Conn: bufferedConn{c.c, c.br}}
	var inSecret, upSecret serverSecret
	insideCfg := &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.standIns.Certificate(d.Host) },
		// Requests are read one by one as HTTP/1.1; a client that offers HTTP/2 as well
		// takes HTTP/1.1 here.
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
		// The sandbox is on this machine: full records from the first byte.
		DynamicRecordSizingDisabled: true,
		// Nothing is written on the sandbox's side after the handshake but the answers,
		// whose records may be sealed here (see takeOver), counted from the first.
		SessionTicketsDisabled: true,
		KeyLogWriter:           &inSecret,
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.HeadTimeout)
	defer cancel()
	upCfg := p.upstream(d, logins)
	upCfg.KeyLogWriter = &upSecret
	shown := c.clientCertificates(ctx, d, logins, insideCfg, upCfg)
	inside := tls.Server(batch, insideCfg)
	raw := bufio.NewReaderSize(up, rawReadSize)
	handshake := &recordAtATime{r: raw}
	outside := tls.Client(bufferedConn{up, handshake}, upCfg)
	// Both handshakes at once: the setup costs the longer of the two, not their sum.
	upDone := make(chan error, 1)
	go func() { upDone <- outside.HandshakeContext(ctx) }()
	p.handshaking.Add(1)
	err := inside.HandshakeContext(ctx)
	if shown != nil {
		var peer []*x509.Certificate
		if err == nil {
			peer = inside.ConnectionState().PeerCertificates
		}
		shown <- peer
	}
	if err != nil {
		c.note(Refusal{Host: d.Host, Port: d.Port, Header: StandInNotTrusted, Reason: p.untrusted(names, d, err)})
	}
	p.handshaking.Add(-1)
	if err != nil {
		up.Close()
		<-upDone
		return
	}
	if err := <-upDone; err != nil {
		// The answer goes to the program's first request: an answer before it would be one
		// to nothing, which HTTP clients drop.
		why := c.unverified(d, names, err)
		br := getReader(inside)
		if _, ok := c.readRequestOn(inside, br, true); ok {
			writeError(inside, http.StatusBadGateway, BlockedBadCertificate, why)
		}
		putReader(br)
		return
	}
	br := getReader(inside)
	defer putReader(br)
	if toSandbox, ok := takeOver(inside, batch, &inSecret, outside, raw, handshake, &upSecret); ok {
		c.carry(toSandbox, br, outside, toSandbox.upBr, d, logins, nil)
		return
	}
	upBr := bufio.NewReaderSize(outside, MaxResponseHeadBytes)
	c.carry(&batchWriter{Conn: inside, batch: batch, src: upBr, raw: raw}, br, outside, upBr, d, logins, nil)
}

// clientCertificates readies the two TLS configurations of a connection to d for the logins
// that sign in there with a client certificate, if any: the sandbox's side asks the program
// for one (verifying nothing: it is matched, byte for byte, with the stand-ins), and when
// the host asks the proxy for one, it waits for what the program showed, on the channel
// returned, and shows the real certificate of the login whose stand-in that was, or none.
// Both handshakes still run at once. nil: no login here has a client certificate.
func (c *conn) clientCertificates(ctx context.Context, d hosts.Decision, logins []StandIn, inside, up *tls.Config) chan []*x509.Certificate {
	if !slices.ContainsFunc(logins, func(l StandIn) bool { return l.ClientCert != nil }) {
		return nil
	}
	shown := make(chan []*x509.Certificate, 1)
	inside.ClientAuth = tls.RequestClientCert
	up.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		var peer []*x509.Certificate
		select {
		case peer = <-shown:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if len(peer) > 0 {
			for _, l := range logins {
				if l.ClientCert != nil && bytes.Equal(peer[0].Raw, l.StandInCert) {
					if f := c.p.standIns.Substituted; f != nil {
						f(l.Login, d.Host)
					}
					return l.ClientCert, nil
				}
			}
		}
		return &tls.Certificate{}, nil
	}
	return shown
}

// unverified notes, and says, why the TLS connection to d's real host failed: its
// certificate did not verify, or it could not be reached over TLS.
func (c *conn) unverified(d hosts.Decision, names string, err error) string {
	why := d.Target() + " could not be reached over TLS (" + err.Error() + ")"
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) {
		why = "the certificate of " + d.Target() + " did not verify (" + verr.Err.Error() + ")"
		if names != "" {
			why += ", so the " + names + " login's secret was not sent to it"
		}
	}
	c.note(Refusal{Host: d.Host, Port: d.Port, Header: BlockedBadCertificate, Reason: why})
	return why
}

// carry passes the requests read through br to the real host over outside, each with the
// secrets of logins in place of their stand-ins, and its answers, read through upBr, to the
// sandbox's side toSandbox (whose reads br makes), until either side ends. first is a request
// already read, or nil. On the socket, every request must name the host d.
func (c *conn) carry(toSandbox net.Conn, br *bufio.Reader, outside net.Conn, upBr *bufio.Reader, d hosts.Decision, logins []StandIn, first *request) {
	p := c.p
	c.carried = true
	// A download through here is as much a bulk transfer as one through a tunnel.
	defer p.growFull(c.c, c.up, FullTerminatedSandboxSide)()
	for n := 0; ; n++ {
		req := first
		if n > 0 || req == nil {
			var ok bool
			if req, ok = c.readRequestOn(toSandbox, br, n == 0); !ok {
				return
			}
		}
		if req.http == nil {
			writeError(toSandbox, http.StatusBadRequest, "", "a CONNECT inside a connection to "+d.Target()+" is not carried")
			return
		}
		if c.socket && !sameSocketHost(req.http.Host, d) {
			writeError(toSandbox, http.StatusMisdirectedRequest, "", "this connection carries requests to "+d.Target()+" only; open another for "+req.http.Host)
			return
		}
		signed, why := resign(req.http, logins, d.Host)
		if why != "" {
			if p.standIns.WayOut != nil {
				for _, l := range logins {
					if l.SigV4 != nil {
						why += "; " + p.standIns.WayOut(l.Login)
						break
					}
				}
			}
			c.note(Refusal{Host: d.Host, Port: d.Port, Header: StandInNotSigned, Reason: d.Target() + ": " + why})
			writeError(toSandbox, http.StatusForbidden, StandInNotSigned, why)
			return
		}
		if signed != "" {
			if f := p.standIns.Substituted; f != nil {
				f(signed, d.Host)
			}
		}
		for _, login := range substitute(req.http.Header, logins) {
			if f := p.standIns.Substituted; f != nil {
				f(login, d.Host)
			}
		}
		if !c.exchange(toSandbox, outside, upBr, req.http, d.Target()) {
			if c.switched {
				switchedStream(toSandbox, br, outside, upBr)
			}
			return
		}
	}
}

// A program that cannot be made to trust OpenWorker's certificate authority (gh on a Mac,
// which verifies with the system's trust settings alone) can be told to speak plain HTTP to
// a Unix socket instead of TLS to its hosts (gh's http_unix_socket). The socket lies in the
// sandbox's private tmp, where only the sandbox's programs reach it; the proxy speaks TLS to
// the real host itself, so the program has no certificate to trust, and the stand-in is
// replaced there as on a terminated connection.

// serveSocket serves one connection of the socket: its first request names the host (Host,
// port 443 unless it gives one), which is decided on as a CONNECT to it would be; the
// requests go to it over TLS that the proxy opens and verifies, with the secrets of the
// logins bound to it in place of their stand-ins. To another allowed host they go as they
// are.
func (c *conn) serveSocket() {
	c.br = getReader(c.c)
	defer c.releaseReader()
	req, ok := c.readRequest(true)
	if !ok {
		return
	}
	if req.http == nil || req.http.URL.IsAbs() || req.http.Host == "" {
		writeError(c.c, http.StatusBadRequest, "", "this socket carries plain HTTP requests for https sites as a program sends them to the site itself (GET /path, with Host); send anything else through the proxy in HTTPS_PROXY")
		return
	}
	d, ok := c.decide(&request{method: http.MethodConnect, target: net.JoinHostPort(socketTarget(req.http.Host))})
	if !ok {
		return
	}
	up, ok := c.reach(d)
	if !ok {
		return
	}
	logins := c.p.standInsFor(d)
	c.terminated = loginNames(logins)
	c.c.SetDeadline(time.Time{})
	raw := bufio.NewReaderSize(up, rawReadSize)
	outside := tls.Client(bufferedConn{up, raw}, c.p.upstream(d, logins))
	ctx, cancel := context.WithTimeout(context.Background(), c.p.opts.HeadTimeout)
	err := outside.HandshakeContext(ctx)
	cancel()
	if err != nil {
		writeError(c.c, http.StatusBadGateway, BlockedBadCertificate, c.unverified(d, c.terminated, err))
		return
	}
	batch := &batchConn{Conn: c.c}
	upBr := bufio.NewReaderSize(outside, MaxResponseHeadBytes)
	c.carry(&batchWriter{Conn: batch, batch: batch, src: upBr, raw: raw}, c.br, outside, upBr, d, logins, req)
}

// switchedStream carries what follows a protocol switch (kubectl exec's stream, a
// WebSocket) between the sandbox's side (inside, read through br) and the host's (outside,
// read through upBr), both ways, until either side ends; then it ends both. The stand-ins
// were replaced in the request that asked for the switch; nothing in the stream is looked
// at, as nothing in a tunnel is.
func switchedStream(inside net.Conn, br *bufio.Reader, outside net.Conn, upBr *bufio.Reader) {
	inside.SetDeadline(time.Time{})
	outside.SetDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		io.Copy(outside, br)
		outside.Close()
		inside.Close()
		close(done)
	}()
	io.Copy(inside, upBr)
	inside.Close()
	outside.Close()
	<-done
}

// socketTarget is the host and port a request on the socket names in its Host: port 443
// when it gives none.
func socketTarget(host string) (string, string) {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "443"
	}
	return h, port
}

// sameSocketHost says whether a request's Host names d.
func sameSocketHost(host string, d hosts.Decision) bool {
	h, port := socketTarget(host)
	return strings.EqualFold(h, d.Host) && port == strconv.Itoa(d.Port)
}

// readRequestOn reads one request from br (reading conn) within the head timeout, or, between
// requests, the idle timeout; it answers a bad head itself.
func (c *conn) readRequestOn(conn net.Conn, br *bufio.Reader, first bool) (*request, bool) {
	if !first {
		conn.SetReadDeadline(time.Now().Add(c.p.opts.IdleTimeout))
		if _, err := br.Peek(1); err != nil {
			return nil, false
		}
	}
	conn.SetReadDeadline(time.Now().Add(c.p.opts.HeadTimeout))
	req, status, msg := readRequest(br)
	if req == nil {
		if status != 0 {
			writeError(conn, status, "", msg)
		}
		return nil, false
	}
	return req, true
}

// untrusted says why a program's handshake for a stand-in login's host failed, and the way
// out.
func (p *Proxy) untrusted(names string, d hosts.Decision, err error) string {
	msg := err.Error()
	why := "the program did not trust OpenWorker's certificate authority (" + msg + ")"
	switch {
	case strings.Contains(msg, "application protocol"):
		why = "the program offered only HTTP/2, and OpenWorker carries the " + names + " login's requests to " + d.Host + " over HTTP/1.1 only (" + msg + ")"
	case strings.Contains(msg, "does not look like a TLS handshake") || strings.Contains(msg, "unsupported versions"):
		why = "the program did not start TLS 1.2 or 1.3 (" + msg + ")"
	}
	out := d.Target() + " is reached with the " + names + " login's stand-in, which OpenWorker replaces with the real secret on the way: " + why +
		". Programs that read SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO or the system's bundle trust it"
	if p.standIns.WayOut != nil {
		for _, l := range strings.Split(names, " and ") {
			out += "; " + p.standIns.WayOut(l)
		}
	}
	return out
}

// substitute puts each stand-in of logins in Authorization headers (Bearer, token, or Basic's
// user or password) back to its real secret, and returns the logins it replaced, once each.
func substitute(h http.Header, logins []StandIn) []string {
	var used []string
	mark := func(l StandIn) {
		if !slices.Contains(used, l.Login) {
			used = append(used, l.Login)
		}
	}
	vals := h["Authorization"]
	for i, v := range vals {
		scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
		if !ok {
			continue
		}
		cred = strings.TrimSpace(cred)
		switch strings.ToLower(scheme) {
		case "bearer", "token":
			for _, l := range logins {
				if cred == l.StandIn {
					vals[i] = scheme + " " + l.Real
					mark(l)
					break
				}
			}
		case "basic":
			raw, err := base64.StdEncoding.DecodeString(cred)
			if err != nil {
				continue
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				continue
			}
			changed := false
			for _, l := range logins {
				if pass == l.StandIn {
					pass, changed = l.Real, true
					mark(l)
				}
				if user == l.StandIn {
					user, changed = l.Real, true
					mark(l)
				}
			}
			if changed {
				vals[i] = scheme + " " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
			}
		}
	}
	return used
}

// A terminated connection moves its bodies through two TLS stacks, which read and write a
// record (16 KiB) at a time: one system call each, where a tunnel moves megabytes per call.
// So the origin's side is read through a buffer that takes in several records per call, and
// the records of what is passed on to the sandbox together are written in one call.
const (
	rawReadSize   = 64 << 10
	batchSize     = 256 << 10
	maxTLSRecord  = 16<<10 + 256 // a record's plaintext and what TLS adds around it, at most
	batchMinSpace = 16 << 10     // room a batch must have left to take another record
)

// batchBuffers hold a batch's plaintext, and its records as they are written, only while a
// body moves: an idle terminated connection holds none.
var batchBuffers = sync.Pool{New: func() any { b := make([]byte, 0, batchSize+batchSize/8); return &b }}

// batchConn is the sandbox side's socket under its TLS stack: while a batch is held, what
// the stack writes is kept and written at once by flush.
type batchConn struct {
	net.Conn
	buf    *[]byte // while a batch is held
	sealed bool    // sandboxRecords writes the socket: the TLS stack may not
	// The TLS stack wrote after sealed: the program asked it for new keys (or the stack
	// failed, and the connection ends), and sandboxRecords sends a KeyUpdate of its own.
	asked atomic.Bool
}

func (b *batchConn) Write(p []byte) (int, error) {
	if b.sealed {
		// Not sent (its sequence numbers are behind), yet taken as sent: a stack that
		// cannot send its KeyUpdate does not take the program's new keys either.
		b.asked.Store(true)
		return len(p), nil
	}
	if b.buf == nil {
		return b.Conn.Write(p)
	}
	*b.buf = append(*b.buf, p...)
	return len(p), nil
}

// write passes p through tc as one batch: its records leave in one write.
func (b *batchConn) write(tc net.Conn, p []byte) (int, error) {
	buf := batchBuffers.Get().(*[]byte)
	b.buf = buf
	n, err := tc.Write(p)
	b.buf = nil
	if len(*buf) > 0 {
		_, werr := b.Conn.Write(*buf)
		if err == nil {
			err = werr
		}
	}
	if cap(*buf) <= 2*batchSize { // an unusually large write's is not kept
		*buf = (*buf)[:0]
		batchBuffers.Put(buf)
	}
	return n, err
}

// batchWriter is the sandbox's TLS connection as a response is written to it: each write is
// one batch, and a body is read from the origin's side for as long as whole records wait
// there, up to batchSize, before it is passed on.
type batchWriter struct {
	net.Conn // the sandbox's TLS connection
	batch    *batchConn
	src      *bufio.Reader // the origin's plaintext, as the response head was read
	raw      *bufio.Reader // the origin's side's socket, under its TLS stack
}

func (w *batchWriter) Write(p []byte) (int, error) { return w.batch.write(w.Conn, p) }

// ReadFrom is the body's copy (io.Copy finds it), gathered while the origin's side has more
// at hand (gatherCopy).
func (w *batchWriter) ReadFrom(r io.Reader) (int64, error) {
	return gatherCopy(r, batchMinSpace, func() bool { return w.src.Buffered() > 0 || w.raw.Buffered() >= maxTLSRecord }, w.Write)
}
