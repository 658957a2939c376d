package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// fakeNet resolves names from a table and dials "public" test addresses (from the
// documentation range 203.0.113.0/24) by connecting to loopback origins instead, so that tests
// can use real host names without any traffic leaving the machine. Loopback addresses are
// dialled as they are; anything else is refused.
type fakeNet struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	reroute map[netip.AddrPort]string // public test address -> loopback origin
	dialed  []string
}

func newFakeNet() *fakeNet {
	return &fakeNet{names: map[string][]netip.Addr{}, reroute: map[netip.AddrPort]string{}}
}

func (f *fakeNet) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.names[host]; ok {
		return append([]netip.Addr(nil), a...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// route makes name resolve to a fresh public test address that leads to origin (host:port on
// loopback) at port.
func (f *fakeNet) route(name string, port int, origin string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := netip.AddrFrom4([4]byte{203, 0, 113, byte(10 + len(f.reroute))})
	f.names[name] = []netip.Addr{a}
	f.reroute[netip.AddrPortFrom(a, uint16(port))] = origin
}

func (f *fakeNet) resolveTo(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range addrs {
		f.names[name] = append(f.names[name], netip.MustParseAddr(s))
	}
}

func (f *fakeNet) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, address)
	ap, err := netip.ParseAddrPort(address)
	origin, rerouted := f.reroute[ap]
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if rerouted {
		address = origin
	} else if !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test network: refusing to dial %s, which is not loopback", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func (f *fakeNet) dials() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.dialed...)
}

func entries(t testing.TB, ss ...string) []hosts.Entry {
	t.Helper()
	var out []hosts.Entry
	for _, s := range ss {
		e, err := hosts.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// session is a proxy listening on loopback with a fake network.
type session struct {
	p    *Proxy
	port int
	net  *fakeNet
	tok  string
}

func startProxy(t testing.TB, opts Options, allow ...string) *session {
	t.Helper()
	fn := newFakeNet()
	if opts.Token == "" {
		opts.Token = NewToken()
	}
	if opts.Resolver == nil {
		opts.Resolver = fn
	}
	if opts.Dial == nil {
		opts.Dial = fn.Dial
	}
	opts.Allow = append(opts.Allow, entries(t, allow...)...)
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	port, err := p.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &session{p: p, port: port, net: fn, tok: opts.Token}
}

// open is how many client connections the proxy has not yet closed and forgotten.
func (s *session) open() int {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return len(s.p.conns)
}

func (s *session) proxyURL() *url.URL {
	u, _ := url.Parse(s.p.URL(s.port))
	return u
}

// client is a Go HTTP client that uses the proxy, trusts origin's certificate for the name
// "example.com" (the name in httptest's certificate), and records the answer to CONNECT.
type client struct {
	*http.Client
	mu      sync.Mutex
	connect *http.Response
}

func newClient(t testing.TB, proxy *url.URL, origin *httptest.Server) *client {
	c := &client{}
	tr := &http.Transport{
		Proxy: http.ProxyURL(proxy),
		OnProxyConnectResponse: func(ctx context.Context, u *url.URL, req *http.Request, resp *http.Response) error {
			c.mu.Lock()
			c.connect = resp
			c.mu.Unlock()
			return nil
		},
		ForceAttemptHTTP2: false,
	}
	if origin != nil && origin.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(origin.Certificate())
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, ServerName: "example.com"}
	}
	c.Client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

func (c *client) connectResponse() *http.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connect
}

func originPort(t testing.TB, s *httptest.Server) int {
	t.Helper()
	_, p, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func hello(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "hello from "+r.Host+r.URL.Path)
}

// echoServer accepts TCP connections on loopback and echoes what it reads.
func echoServer(t testing.TB, network, addr string) net.Listener {
	l, _ := countingEchoServer(t, network, addr)
	return l
}

// countingEchoServer is echoServer that also counts the connections it has finished with. It
// copies through a buffer of its own: Go's io.Copy between sockets would splice through pipes
// that Go keeps after the connection until garbage collections, which leak tests would count.
func countingEchoServer(t testing.TB, network, addr string) (net.Listener, *atomic.Int64) {
	t.Helper()
	var finished atomic.Int64
	l := tcpServer(t, network, addr, func(c net.Conn) {
		defer finished.Add(1)
		io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 4096))
	})
	return l, &finished
}

// tcpServer listens on loopback and serves each connection with handle, on a goroutine of its
// own, closing it after; the test's cleanup stops it and waits for every connection.
func tcpServer(t testing.TB, network, addr string, handle func(net.Conn)) net.Listener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l
}

// rawConnect opens a connection to the proxy and sends a CONNECT for target with auth (the
// whole header value, "" for none). It returns the connection and the response head.
func rawConnect(t testing.TB, proxyAddr, target, auth string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(newBufReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading the answer to CONNECT %s: %v", target, err)
	}
	c.SetReadDeadline(time.Time{})
	return c, resp
}
