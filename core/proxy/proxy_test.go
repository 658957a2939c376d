package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

func newBufReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func readAll(t testing.TB, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHTTPSThroughConnect uses Go's client over CONNECT to a TLS origin reached by name, as a
// sandboxed program with HTTPS_PROXY does, including the wildcard edge cases.
func TestHTTPSThroughConnect(t *testing.T) {
	origin := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer origin.Close()
	s := startProxy(t, Options{}, "*.github.com", "gitlab.com")
	for _, name := range []string{"api.github.com", "a.b.github.com", "github.com", "evilgithub.com", "github.com.evil.net", "gitlab.com", "www.gitlab.com"} {
		s.net.route(name, 443, origin.Listener.Addr().String())
	}
	tests := []struct {
		name, host string
		allowed    bool
	}{
		{"wildcard_subdomain", "api.github.com", true},
		{"wildcard_deep", "a.b.github.com", true},
		{"wildcard_not_apex", "github.com", false},
		{"suffix_without_dot", "evilgithub.com", false},
		{"listed_name_as_prefix", "github.com.evil.net", false},
		{"exact", "gitlab.com", true},
		{"exact_not_subdomain", "www.gitlab.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, s.proxyURL(), origin)
			resp, err := c.Get("https://" + tt.host + "/x")
			if tt.allowed {
				if err != nil {
					t.Fatalf("GET https://%s: %v", tt.host, err)
				}
				defer resp.Body.Close()
				if body := readAll(t, resp.Body); resp.StatusCode != 200 || body != "hello from "+tt.host+"/x" {
					t.Fatalf("GET https://%s = %d %q", tt.host, resp.StatusCode, body)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET https://%s went through a proxy that should refuse it", tt.host)
			}
			cr := c.connectResponse()
			if cr == nil || cr.StatusCode != 403 || cr.Header.Get("X-Proxy-Error") != BlockedByAllowlist {
				t.Fatalf("CONNECT %s answered %+v; want 403 with X-Proxy-Error: %s", tt.host, cr, BlockedByAllowlist)
			}
		})
	}
	for _, d := range s.net.dials() {
		if !strings.HasPrefix(d, "203.0.113.") {
			t.Errorf("the proxy dialled %s, which no allowed name resolves to", d)
		}
	}
}

// TestRefusalText checks the 403 a refused CONNECT gets, byte for byte where it matters.
func TestRefusalText(t *testing.T) {
	s := startProxy(t, Options{})
	c, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(s.port), "example.com:443", basic(User, s.tok))
	defer c.Close()
	body := readAll(t, resp.Body)
	want := "example.com:443 is not on this session's allow list; allow it for this session or in Settings ▸ Sandbox ▸ Choose sites…\n"
	if resp.StatusCode != 403 || resp.Header.Get("X-Proxy-Error") != BlockedByAllowlist || body != want {
		t.Fatalf("refusal = %d %q %q; want 403 %q %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), body, BlockedByAllowlist, want)
	}
	got := s.p.Blocked(time.Now().Add(-time.Minute), time.Now())
	if len(got) != 1 || got[0].Host != "example.com" || got[0].Port != 443 || got[0].Header != BlockedByAllowlist || got[0].Reason != strings.TrimSuffix(want, "\n") {
		t.Fatalf("Blocked() = %+v; want the one refusal of example.com:443", got)
	}
}

// TestPlainHTTP forwards absolute-form requests, with keep-alive and hop-by-hop headers
// removed, and refuses hosts not on the list with the same text.
func TestPlainHTTP(t *testing.T) {
	var sawProxyAuth, sawConnection []string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawProxyAuth = append(sawProxyAuth, r.Header.Get("Proxy-Authorization"))
		sawConnection = append(sawConnection, r.Header.Get("X-Hop"))
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "hop")
		io.WriteString(w, r.Method+" "+r.Host+r.URL.RequestURI()+" "+string(body))
	}))
	defer origin.Close()
	port := originPort(t, origin)
	s := startProxy(t, Options{}, "127.0.0.1:"+strconv.Itoa(port), "plain.example:80")
	s.net.route("plain.example", 80, origin.Listener.Addr().String())
	c := newClient(t, s.proxyURL(), nil)

	reused := 0
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Reused {
			reused++
		}
	}}
	for i, u := range []string{"http://127.0.0.1:" + strconv.Itoa(port) + "/a?q=1", "http://127.0.0.1:" + strconv.Itoa(port) + "/b", "http://plain.example/c"} {
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", u, strings.NewReader("body"+strconv.Itoa(i)))
		req.Header.Set("Connection", "X-Hop")
		req.Header.Set("X-Hop", "should not pass")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		resp.Body.Close()
		wantHost := strings.TrimPrefix(u, "http://")
		wantHost = wantHost[:strings.IndexByte(wantHost, '/')]
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "POST "+wantHost+"/") || !strings.HasSuffix(body, " body"+strconv.Itoa(i)) {
			t.Fatalf("POST %s = %d %q", u, resp.StatusCode, body)
		}
		if resp.Header.Get("X-Secret") != "" {
			t.Fatalf("a header the origin named in Connection reached the client")
		}
	}
	if reused < 2 {
		t.Errorf("the client reused its proxy connection %d times; want keep-alive across the three requests", reused)
	}
	for i := range sawProxyAuth {
		if sawProxyAuth[i] != "" || sawConnection[i] != "" {
			t.Fatalf("the origin saw Proxy-Authorization %q and X-Hop %q; hop-by-hop headers must not be forwarded", sawProxyAuth[i], sawConnection[i])
		}
	}

	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port+1) + "/")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-Proxy-Error") != BlockedByAllowlist || !strings.Contains(body, "127.0.0.1:"+strconv.Itoa(port+1)+" is not on this session's allow list") {
		t.Fatalf("GET of an unlisted port = %d %q %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), body)
	}
}

// TestAuth refuses requests without the session's token, with 407 and Proxy-Authenticate, and
// a token of one session at another's proxy.
func TestAuth(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	target := echo.Addr().String()
	s := startProxy(t, Options{}, target)
	other := startProxy(t, Options{}, target)
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	tests := []struct {
		name, auth string
		status     int
	}{
		{"no_token", "", 407},
		{"wrong_token", basic(User, s.tok[:len(s.tok)-1]+"x"), 407},
		{"wrong_user", basic("root", s.tok), 407},
		{"other_session_token", basic(User, other.tok), 407},
		{"token_prefix", basic(User, s.tok[:10]), 407},
		{"not_basic", "Bearer " + s.tok, 407},
		{"bad_base64", "Basic !!!", 407},
		{"right_token", basic(User, s.tok), 200},
		{"scheme_any_case", "bAsIc " + base64.StdEncoding.EncodeToString([]byte(User+":"+s.tok)), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, resp := rawConnect(t, addr, target, tt.auth)
			defer c.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("CONNECT with %q = %d, want %d", tt.auth, resp.StatusCode, tt.status)
			}
			if tt.status == 407 && !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic ") {
				t.Fatalf("407 without Proxy-Authenticate: %v", resp.Header)
			}
		})
	}
	// Go's client with no credentials in the proxy URL gets 407 too.
	u := s.proxyURL()
	u.User = nil
	c := newClient(t, u, nil)
	resp, err := c.Get("http://" + target + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 407 {
		t.Fatalf("plain HTTP without a token = %d, want 407", resp.StatusCode)
	}
	// A closed session's token is dead with it.
	s.p.Close()
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatal("a closed proxy still accepts connections")
	}
}

// TestPrivateDestinations tries to reach loopback and private addresses through names, and the
// proxy's own port through a literal entry.
func TestPrivateDestinations(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	ep := echo.Addr().(*net.TCPAddr).Port
	forbidden := echoServer(t, "tcp4", "127.0.0.1:0")
	fp := forbidden.Addr().(*net.TCPAddr).Port
	// 203.0.113.7 stands for an address of this machine's own, and the kernel cannot be
	// asked about 203.0.113.8.
	own := func(a netip.Addr) (bool, error) {
		if a == netip.MustParseAddr("203.0.113.8") {
			return false, errors.New("too many open files")
		}
		return a == netip.MustParseAddr("203.0.113.7"), nil
	}
	s := startProxy(t, Options{Forbidden: []netip.AddrPort{netip.MustParseAddrPort(forbidden.Addr().String())}, OwnAddr: own},
		"rebind.example:"+strconv.Itoa(ep), "mixed.example:"+strconv.Itoa(ep), "mapped.example:"+strconv.Itoa(ep),
		"own.example:"+strconv.Itoa(ep), "unknown.example:"+strconv.Itoa(ep), "[64:ff9b::cb00:7107]:"+strconv.Itoa(fp),
		"ten.example:"+strconv.Itoa(ep), "cgnat.example:"+strconv.Itoa(ep), "*.wild.example:"+strconv.Itoa(ep),
		"127.0.0.1:"+strconv.Itoa(ep), "localhost:"+strconv.Itoa(ep),
		"[::1]:"+strconv.Itoa(fp), "127.0.0.1:"+strconv.Itoa(fp), "localhost:"+strconv.Itoa(fp))
	s.p.SetAllowList(append(s.p.rules.Load().allow.Entries(), entries(t, "127.0.0.1:"+strconv.Itoa(s.port), "0.0.0.0:"+strconv.Itoa(s.port))...))
	s.net.resolveTo("rebind.example", "127.0.0.1")
	s.net.resolveTo("mixed.example", "203.0.113.99", "127.0.0.1")
	s.net.resolveTo("mapped.example", "::ffff:127.0.0.1")
	s.net.resolveTo("ten.example", "10.1.2.3")
	s.net.resolveTo("cgnat.example", "100.64.0.1")
	s.net.resolveTo("a.wild.example", "127.0.0.1")
	s.net.resolveTo("own.example", "203.0.113.99", "203.0.113.7")
	s.net.resolveTo("unknown.example", "203.0.113.8")
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	tests := []struct {
		name, target string
		status       int
		code, says   string
	}{
		{"name_to_loopback", "rebind.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "resolves to 127.0.0.1"},
		{"name_with_one_loopback_address", "mixed.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "resolves to 127.0.0.1"},
		{"name_to_mapped_loopback", "mapped.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "resolves to 127.0.0.1"},
		{"name_to_private", "ten.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "10.1.2.3"},
		{"name_to_cgnat", "cgnat.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "100.64.0.1"},
		{"wildcard_to_loopback", "a.wild.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "resolves to 127.0.0.1"},
		{"name_to_this_machine", "own.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress,
			"resolves to 203.0.113.7, an address of this machine, which the proxy does not reach through a name; to reach it, allow the address itself (203.0.113.7:" + strconv.Itoa(ep) + ")"},
		{"kernel_cannot_say", "unknown.example:" + strconv.Itoa(ep), 403, BlockedPrivateAddress, "since the kernel could not say whether it is one (too many open files)"},
		{"forbidden_through_nat64", "[64:ff9b::cb00:7107]:" + strconv.Itoa(fp), 403, BlockedPrivateAddress, "app's own services"},
		{"literal_loopback", "127.0.0.1:" + strconv.Itoa(ep), 200, "", ""},
		{"localhost_literal", "localhost:" + strconv.Itoa(ep), 200, "", ""},
		{"own_port_literal", "127.0.0.1:" + strconv.Itoa(s.port), 403, BlockedPrivateAddress, "the proxy's own address"},
		{"own_port_unspecified", "0.0.0.0:" + strconv.Itoa(s.port), 403, BlockedPrivateAddress, "the proxy's own address"},
		{"forbidden_literal", "127.0.0.1:" + strconv.Itoa(fp), 403, BlockedPrivateAddress, "app's own services"},
		{"forbidden_other_loopback", "[::1]:" + strconv.Itoa(fp), 403, BlockedPrivateAddress, "app's own services"},
		{"forbidden_localhost", "localhost:" + strconv.Itoa(fp), 403, BlockedPrivateAddress, "app's own services"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, resp := rawConnect(t, addr, tt.target, basic(User, s.tok))
			defer c.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("X-Proxy-Error") != tt.code {
				t.Fatalf("CONNECT %s = %d %q, want %d %q", tt.target, resp.StatusCode, resp.Header.Get("X-Proxy-Error"), tt.status, tt.code)
			}
			if tt.status == 200 {
				io.WriteString(c, "ping")
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
					t.Fatalf("tunnel to %s did not echo: %q %v", tt.target, buf, err)
				}
				return
			}
			if body := readAll(t, resp.Body); !strings.Contains(body, tt.says) {
				t.Fatalf("refusal body %q does not say %q", body, tt.says)
			}
		})
	}
	for _, d := range s.net.dials() {
		if ap := netip.MustParseAddrPort(d); ap.Port() != uint16(ep) {
			t.Errorf("the proxy dialled %s, a refused destination", d)
		}
	}
	// The record says which entry would open a name that led to a special address: the
	// address's own.
	for _, r := range s.p.Blocked(time.Time{}, time.Now()) {
		want, ok := map[string]string{"own.example": "203.0.113.7:", "rebind.example": "127.0.0.1:", "127.0.0.1": ""}[r.Host]
		if want != "" {
			want += strconv.Itoa(ep)
		}
		if ok && r.Allow != want {
			t.Errorf("the refusal of %s says an entry for %q would open it, want %q", r.Target(), r.Allow, want)
		}
	}
}

// TestLiteralIPv6Loopback reaches an origin on [::1] through an entry naming it.
func TestLiteralIPv6Loopback(t *testing.T) {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine: %v", err)
	}
	l.Close()
	echo := echoServer(t, "tcp6", "[::1]:0")
	s := startProxy(t, Options{}, echo.Addr().String())
	c, resp := rawConnect(t, "[::1]:"+strconv.Itoa(s.port), echo.Addr().String(), basic(User, s.tok))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s = %d", echo.Addr(), resp.StatusCode)
	}
	io.WriteString(c, "v6")
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "v6" {
		t.Fatalf("echo over [::1] = %q %v", buf, err)
	}
}

// TestSwapAndRevoke: the next request sees a new list; a removed host's open tunnel is closed
// and a kept host's tunnel is untouched; a denial closes too.
func TestSwapAndRevoke(t *testing.T) {
	keep := echoServer(t, "tcp4", "127.0.0.1:0")
	gone := echoServer(t, "tcp4", "127.0.0.1:0")
	s := startProxy(t, Options{})
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	auth := basic(User, s.tok)

	c, resp := rawConnect(t, addr, gone.Addr().String(), auth)
	c.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("before the swap: %d, want 403", resp.StatusCode)
	}
	s.p.SetAllowList(entries(t, keep.Addr().String(), gone.Addr().String()))
	kc, resp := rawConnect(t, addr, keep.Addr().String(), auth)
	if resp.StatusCode != 200 {
		t.Fatalf("the next request after the swap: %d, want 200", resp.StatusCode)
	}
	gc, resp := rawConnect(t, addr, gone.Addr().String(), auth)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %d", gone.Addr(), resp.StatusCode)
	}
	ping := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "ping"); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_, err := io.ReadFull(c, buf)
		return err
	}
	if ping(kc) != nil || ping(gc) != nil {
		t.Fatal("tunnels do not work before revocation")
	}
	s.p.SetAllowList(entries(t, keep.Addr().String()))
	gc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := gc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the tunnel to a removed host is still open after the swap (read %d, %v)", n, err)
	}
	if err := ping(kc); err != nil {
		t.Fatalf("the tunnel to a host still allowed was disturbed: %v", err)
	}
	if _, resp := rawConnect(t, addr, gone.Addr().String(), auth); resp.StatusCode != 403 {
		t.Fatalf("a removed host: %d, want 403", resp.StatusCode)
	}
	s.p.SetDenied(entries(t, keep.Addr().String()))
	kc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := kc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the tunnel to a denied host is still open (read %d, %v)", n, err)
	}
	_, resp = rawConnect(t, addr, keep.Addr().String(), auth)
	if body := readAll(t, resp.Body); resp.StatusCode != 403 || !strings.Contains(body, "was denied for this session") {
		t.Fatalf("a denied host: %d %q", resp.StatusCode, body)
	}
}

// TestLimits: origin-form requests, oversize heads, slow heads, the connection cap and idle
// tunnels.
func TestLimits(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	s := startProxy(t, Options{MaxConns: 3, HeadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}, echo.Addr().String())
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	send := func(t *testing.T, raw string) (*http.Response, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, raw)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp, readAll(t, resp.Body)
	}
	t.Run("origin_form", func(t *testing.T) {
		resp, body := send(t, "GET / HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(User, s.tok)+"\r\n\r\n")
		if resp.StatusCode != 400 || !strings.Contains(body, "egress proxy, not a web server") {
			t.Fatalf("origin-form = %d %q", resp.StatusCode, body)
		}
	})
	t.Run("head_just_fits", func(t *testing.T) {
		head := "CONNECT " + echo.Addr().String() + " HTTP/1.1\r\nProxy-Authorization: " + basic(User, s.tok) + "\r\n"
		pad := MaxHeadBytes - len(head) - len("X: \r\n\r\n")
		resp, _ := send(t, head+"X: "+strings.Repeat("a", pad)+"\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("a head of exactly %d bytes = %d, want 200", MaxHeadBytes, resp.StatusCode)
		}
	})
	t.Run("head_too_large", func(t *testing.T) {
		head := "CONNECT " + echo.Addr().String() + " HTTP/1.1\r\nProxy-Authorization: " + basic(User, s.tok) + "\r\n"
		pad := MaxHeadBytes - len(head) - len("X: \r\n\r\n") + 1
		resp, _ := send(t, head+"X: "+strings.Repeat("a", pad)+"\r\n\r\n")
		if resp.StatusCode != 431 {
			t.Fatalf("a head of %d bytes = %d, want 431", MaxHeadBytes+1, resp.StatusCode)
		}
		resp, _ = send(t, "GET http://x/ HTTP/1.1\r\nX: "+strings.Repeat("a", 1<<20))
		if resp.StatusCode != 431 {
			t.Fatalf("a 1 MiB header line = %d, want 431", resp.StatusCode)
		}
	})
	t.Run("slow_head", func(t *testing.T) {
		start := time.Now()
		resp, _ := send(t, "CONNECT "+echo.Addr().String()+" HTTP/1.1\r\n")
		if resp.StatusCode != 408 || time.Since(start) > 3*time.Second {
			t.Fatalf("an unfinished head = %d after %v, want 408 after the head timeout", resp.StatusCode, time.Since(start))
		}
	})
	t.Run("idle_tunnel", func(t *testing.T) {
		c, resp := rawConnect(t, addr, echo.Addr().String(), basic(User, s.tok))
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		// Traffic keeps it open past the idle time ...
		for range 4 {
			time.Sleep(100 * time.Millisecond)
			io.WriteString(c, "x")
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				t.Fatalf("an active tunnel was closed: %v", err)
			}
		}
		// ... and silence closes it.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("an idle tunnel stayed open: %v", err)
		}
	})
	t.Run("connection_cap", func(t *testing.T) {
		// A proxy of its own, so connections of the cases above do not count.
		s := startProxy(t, Options{MaxConns: 3}, echo.Addr().String())
		addr = "127.0.0.1:" + strconv.Itoa(s.port)
		var open []net.Conn
		for range 3 {
			c, resp := rawConnect(t, addr, echo.Addr().String(), basic(User, s.tok))
			if resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			open = append(open, c)
		}
		resp, body := send(t, "")
		if resp.StatusCode != 503 || !strings.Contains(body, "3 connections open") {
			t.Fatalf("a connection past the cap = %d %q, want 503", resp.StatusCode, body)
		}
		for _, c := range open {
			c.Close()
		}
	})
}

// TestRecord keeps the most recent refusals and counts all of them.
func TestRecord(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := New(Options{Token: NewToken()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range RecordSize + 5 {
		p.record.add(Refusal{Host: "h" + strconv.Itoa(i%7) + ".example", Port: 443, Time: base.Add(time.Duration(i) * time.Second), Header: BlockedByAllowlist})
	}
	c := p.BlockedCounts()
	if c.Total != RecordSize+5 || c.Kept != RecordSize || c.ByTarget["h0.example:443"] != (RecordSize+5+6)/7 {
		t.Fatalf("counts = total %d kept %d h0 %d", c.Total, c.Kept, c.ByTarget["h0.example:443"])
	}
	got := p.Blocked(base.Add(10*time.Second), base.Add(12*time.Second))
	if len(got) != 3 || !got[0].Time.Equal(base.Add(10*time.Second)) || !got[2].Time.Equal(base.Add(12*time.Second)) {
		t.Fatalf("Blocked(10s, 12s) = %+v; the oldest were kept instead of the newest, or the bounds are wrong", got)
	}
	if got := p.Blocked(base, base.Add(4*time.Second)); len(got) != 0 {
		t.Fatalf("Blocked over dropped refusals = %d items, want none", len(got))
	}
	if got := p.Blocked(base, base.Add(time.Hour)); len(got) != RecordSize || !got[0].Time.Equal(base.Add(5*time.Second)) {
		t.Fatalf("Blocked(all) = %d items starting %v", len(got), got[0].Time)
	}
}

// TestListenLoopback holds the same port at both loopback addresses and serves both.
func TestListenLoopback(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	s := startProxy(t, Options{}, echo.Addr().String())
	want := map[string]bool{"127.0.0.1:" + strconv.Itoa(s.port): true}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		want["[::1]:"+strconv.Itoa(s.port)] = true
	}
	got := map[string]bool{}
	for _, a := range s.p.Addrs() {
		got[a.String()] = true
	}
	for a := range want {
		if !got[a] {
			t.Fatalf("Addrs() = %v; want %v", got, want)
		}
		_, resp := rawConnect(t, a, echo.Addr().String(), basic(User, s.tok))
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT through %s = %d", a, resp.StatusCode)
		}
	}
	if got := s.p.URL(s.port); got != "http://openworker:"+s.tok+"@127.0.0.1:"+strconv.Itoa(s.port) {
		t.Fatalf("URL = %s", got)
	}
}

// TestServeHandedListener serves a listener made elsewhere (as the Linux provider does
// inside the sandbox's network namespace), and Close ends its tunnels.
func TestServeHandedListener(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	p, err := New(Options{Token: NewToken(), Allow: entries(t, echo.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	c, resp := rawConnect(t, l.Addr().String(), echo.Addr().String(), basic(User, p.opts.Token))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close = %v, want nil", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a tunnel outlived Close: %v", err)
	}
	if _, err := p.ListenLoopback(); err == nil {
		t.Fatal("a closed proxy listened again")
	}
}

func TestNewRejectsBadTokens(t *testing.T) {
	for _, tok := range []string{"", "short", strings.Repeat("a", 20) + ":x", strings.Repeat("a", 20) + "@"} {
		if _, err := New(Options{Token: tok}); err == nil {
			t.Errorf("New accepted token %q", tok)
		}
	}
	if a, b := NewToken(), NewToken(); a == b || len(a) < 40 {
		t.Fatalf("NewToken = %q, %q; want long distinct tokens", a, b)
	}
}

// TestCurl drives the proxy with curl, as sandboxed tools do.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	tlsOrigin := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer tlsOrigin.Close()
	plain := httptest.NewServer(http.HandlerFunc(hello))
	defer plain.Close()
	tp, pp := originPort(t, tlsOrigin), originPort(t, plain)
	s := startProxy(t, Options{}, "127.0.0.1:"+strconv.Itoa(tp), "127.0.0.1:"+strconv.Itoa(pp))
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(curl, append([]string{"-sS", "-v", "--max-time", "10", "--noproxy", "", "--proxy", s.p.URL(s.port)}, args...)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	t.Run("https_allowed", func(t *testing.T) {
		out, errOut, err := run("-k", "https://127.0.0.1:"+strconv.Itoa(tp)+"/c")
		if err != nil || out != "hello from 127.0.0.1:"+strconv.Itoa(tp)+"/c" {
			t.Fatalf("curl: %v %q\n%s", err, out, errOut)
		}
	})
	t.Run("http_allowed", func(t *testing.T) {
		out, errOut, err := run("http://127.0.0.1:" + strconv.Itoa(pp) + "/p")
		if err != nil || out != "hello from 127.0.0.1:"+strconv.Itoa(pp)+"/p" {
			t.Fatalf("curl: %v %q\n%s", err, out, errOut)
		}
	})
	t.Run("https_refused", func(t *testing.T) {
		_, errOut, err := run("-k", "https://not-listed.example/")
		if err == nil || !strings.Contains(errOut, "403") || !strings.Contains(strings.ToLower(errOut), "x-proxy-error: blocked-by-allowlist") {
			t.Fatalf("curl through a refusal: %v\n%s", err, errOut)
		}
	})
	t.Run("http_refused", func(t *testing.T) {
		out, errOut, err := run("http://not-listed.example/")
		if err != nil || out != "not-listed.example:80 is not on this session's allow list; "+hosts.HowToAllow+"\n" || !strings.Contains(errOut, "403") {
			t.Fatalf("curl plain refusal: %v %q\n%s", err, out, errOut)
		}
	})
	t.Run("wrong_token", func(t *testing.T) {
		cmd := exec.Command(curl, "-sS", "-v", "--max-time", "10", "--noproxy", "", "--proxy", "http://openworker:nope@127.0.0.1:"+strconv.Itoa(s.port), "http://127.0.0.1:"+strconv.Itoa(pp)+"/")
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "407") {
			t.Fatalf("curl with a wrong token:\n%s", out)
		}
	})
}
