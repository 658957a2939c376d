package proxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/localca"
	"github.com/openworker/openworker/core/tstest"
)

const (
	ghStandIn = "gho_standinstandinstandinstandin0000"
	ghReal    = "gho_REALREALREALREALREALREALREALREAL"
)

// standInRig is a session's proxy with one stand-in login (gh, bound to api.github.com:443),
// the machine's CA that signs what the proxy shows the sandbox, and "public" origins whose
// certificates come from a CA of their own that the proxy trusts for the test.
type standInRig struct {
	t        *testing.T
	s        *session
	machine  *localca.CA
	public   *localca.CA
	mu       sync.Mutex
	seen     map[string][]string // host -> Authorization headers the origin saw
	subs     []string
	refusals []Refusal
}

func newStandInRig(t *testing.T, allow ...string) *standInRig {
	t.Helper()
	return newStandInRigWith(t, nil, allow...)
}

// newStandInRigWith is newStandInRig with more logins beside gh's.
func newStandInRigWith(t *testing.T, more []StandIn, allow ...string) *standInRig {
	t.Helper()
	r := &standInRig{t: t, seen: map[string][]string{}}
	var err error
	if r.machine, err = localca.Load(filepath.Join(t.TempDir(), "machine")); err != nil {
		t.Fatal(err)
	}
	if r.public, err = localca.Load(filepath.Join(t.TempDir(), "public")); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(r.public.Certificate())
	r.s = startProxy(t, Options{
		OnRefusal: func(ref Refusal) { r.mu.Lock(); r.refusals = append(r.refusals, ref); r.mu.Unlock() },
		StandIns: &StandIns{
			Logins:      append([]StandIn{{Login: "gh", Host: "api.github.com", Port: 443, StandIn: ghStandIn, Real: ghReal}}, more...),
			Certificate: r.machine.Leaf,
			Roots:       roots,
			Substituted: func(login, host string) { r.mu.Lock(); r.subs = append(r.subs, login+"@"+host); r.mu.Unlock() },
			WayOut:      func(login string) string { return "or share " + login + " by copying it" },
		},
	}, allow...)
	return r
}

// origin serves name over TLS on loopback with a certificate for name from ca (the public
// one, unless given), recording the Authorization headers it sees, and routes name:443 to it.
func (r *standInRig) origin(name string, ca *localca.CA, h http.HandlerFunc) {
	r.t.Helper()
	r.originAs(name, name, ca, h)
}

// originAs is origin with a certificate for certName (a server reached by one name whose
// certificate gives another, as a cluster's API server often is).
func (r *standInRig) originAs(name, certName string, ca *localca.CA, h http.HandlerFunc) {
	r.t.Helper()
	if ca == nil {
		ca = r.public
	}
	leaf, err := ca.Leaf(certName)
	if err != nil {
		r.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen[name] = append(r.seen[name], req.Header.Get("Authorization"))
		r.mu.Unlock()
		if h != nil {
			h(w, req)
			return
		}
		io.WriteString(w, "hello from "+name+" over "+req.Proto)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	r.t.Cleanup(srv.Close)
	r.s.net.route(name, 443, srv.Listener.Addr().String())
}

func (r *standInRig) saw(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen[name]...)
}

// client is an HTTP/1.1 client through the proxy that trusts the machine's CA (the sandbox's
// bundle) and the public one; trustMachine false leaves the machine's out.
func (r *standInRig) client(trustMachine bool) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(r.public.Certificate())
	if trustMachine {
		pool.AddCert(r.machine.Certificate())
	}
	tr := &http.Transport{Proxy: http.ProxyURL(r.s.proxyURL()), TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	r.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func (r *standInRig) get(c *http.Client, url, auth string) (*http.Response, string, error) {
	req, _ := http.NewRequest("GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// tlsThrough opens a CONNECT tunnel to host:443 and a TLS client over it that trusts the
// machine's CA and offers protos, not yet handshaken.
func (r *standInRig) tlsThrough(host string, protos ...string) *tls.Conn {
	r.t.Helper()
	c, resp := rawConnect(r.t, r.s.p.Addrs()[0].String(), host+":443", basic(User, r.s.tok))
	if resp.StatusCode != 200 {
		r.t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	pool := x509.NewCertPool()
	pool.AddCert(r.machine.Certificate())
	return tls.Client(c, &tls.Config{ServerName: host, RootCAs: pool, NextProtos: protos})
}

func (r *standInRig) refused() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.refusals...)
}

func TestStandInIsReplacedOnItsHostAndNowhereElse(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443", "gist.github.com:443")
	r.origin("api.github.com", nil, nil)
	r.origin("gist.github.com", nil, nil)
	c := r.client(true)
	cases := []struct {
		name, url, auth, want string
	}{
		{"token", "https://api.github.com/user", "token " + ghStandIn, "token " + ghReal},
		{"bearer", "https://api.github.com/user", "Bearer " + ghStandIn, "Bearer " + ghReal},
		{"basic_password", "https://api.github.com/repo.git/info/refs", basic("x-access-token", ghStandIn), basic("x-access-token", ghReal)},
		{"basic_user", "https://api.github.com/user", basic(ghStandIn, "x-oauth-basic"), basic(ghReal, "x-oauth-basic")},
		{"another_token_as_is", "https://api.github.com/user", "token gho_somethingelse", "token gho_somethingelse"},
		{"no_auth", "https://api.github.com/user", "", ""},
		// Another allowed host gets the worthless stand-in: its connection is a tunnel the
		// proxy never looks into.
		{"other_host_token", "https://gist.github.com/", "token " + ghStandIn, "token " + ghStandIn},
		{"other_host_basic", "https://gist.github.com/", basic("x", ghStandIn), basic("x", ghStandIn)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := strings.Split(strings.TrimPrefix(tc.url, "https://"), "/")[0]
			before := len(r.saw(host))
			resp, body, err := r.get(c, tc.url, tc.auth)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || body != "hello from "+host+" over HTTP/1.1" {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			if resp.ProtoMajor != 1 {
				t.Errorf("the sandbox's side spoke %s; the proxy offers HTTP/1.1 only", resp.Proto)
			}
			saw := r.saw(host)
			if len(saw) != before+1 || saw[before] != tc.want {
				t.Fatalf("%s saw %q, want %q", host, saw[before:], tc.want)
			}
		})
	}
	r.mu.Lock()
	subs := strings.Join(r.subs, " ")
	r.mu.Unlock()
	if want := strings.TrimSpace(strings.Repeat("gh@api.github.com ", 4)); subs != want {
		t.Errorf("substitutions told: %q, want %q", subs, want)
	}
	for _, seen := range r.saw("gist.github.com") {
		if strings.Contains(seen, ghReal) || strings.Contains(seen, base64.StdEncoding.EncodeToString([]byte("x:"+ghReal))) {
			t.Fatalf("another host saw the real secret: %q", seen)
		}
	}
}

// The secret is put only where the login sends it: a stand-in in the URL or another header
// goes as it is, on the login's own host too.
func TestStandInElsewhereInTheRequestStays(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	var got string
	r.origin("api.github.com", nil, func(w http.ResponseWriter, req *http.Request) {
		got = req.URL.RawQuery + " " + req.Header.Get("X-Token")
	})
	req, _ := http.NewRequest("GET", "https://api.github.com/user?t="+ghStandIn, nil)
	req.Header.Set("X-Token", ghStandIn)
	resp, err := r.client(true).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "t="+ghStandIn+" "+ghStandIn {
		t.Fatalf("the origin saw %q", got)
	}
}

// Requests on one kept-alive connection each get the secret, and bodies stream both ways:
// a chunked upload with Expect: 100-continue (git push's), a large download.
func TestStandInConnectionCarriesManyRequestsAndBodies(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	big := make([]byte, 8<<20)
	rand.Read(big)
	r.origin("api.github.com", nil, func(w http.ResponseWriter, req *http.Request) {
		if req.Method == "POST" {
			h := sha256.New()
			n, _ := io.Copy(h, req.Body)
			fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
			return
		}
		w.Write(big)
	})
	c := r.client(true)
	var conns int
	var mu sync.Mutex
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		conns++
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	for i := range 3 {
		_, body, err := r.get(c, "https://api.github.com/big", "token "+ghStandIn)
		if err != nil || body != string(big) {
			t.Fatalf("download %d: %v, %d bytes", i, err, len(body))
		}
		pr, pw := io.Pipe()
		go func() { pw.Write(big[:3<<20]); pw.Close() }()
		req, _ := http.NewRequest("POST", "https://api.github.com/upload", pr)
		req.Header.Set("Authorization", basic("x", ghStandIn))
		req.Header.Set("Expect", "100-continue")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d %x", 3<<20, sha256.Sum256(big[:3<<20])); string(got) != want {
			t.Fatalf("upload %d: the origin got %q, want %q", i, got, want)
		}
	}
	saw := r.saw("api.github.com")
	if len(saw) != 6 {
		t.Fatalf("the origin saw %d requests", len(saw))
	}
	for _, a := range saw {
		if a != "token "+ghReal && a != basic("x", ghReal) {
			t.Fatalf("a request reached the origin with %q", a)
		}
	}
	if conns != 1 {
		t.Errorf("the client opened %d connections to the proxy; the terminated one should be kept alive", conns)
	}
}

// A real host whose certificate does not verify gets no request, and the program is told why.
func TestStandInHostWithAnUnverifiedCertificateIsRefused(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	impostor, err := localca.Load(filepath.Join(t.TempDir(), "impostor"))
	if err != nil {
		t.Fatal(err)
	}
	r.origin("api.github.com", impostor, nil)
	resp, body, err := r.get(r.client(true), "https://api.github.com/user", "token "+ghStandIn)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Proxy-Error") != BlockedBadCertificate ||
		!strings.Contains(body, "the certificate of api.github.com:443 did not verify (x509: certificate signed by unknown authority") ||
		!strings.Contains(body, "so the gh login's secret was not sent to it") {
		t.Fatalf("%d %q %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), body)
	}
	if saw := r.saw("api.github.com"); len(saw) != 0 {
		t.Fatalf("the impostor got requests: %q", saw)
	}
	if refs := r.refused(); len(refs) != 1 || refs[0].Header != BlockedBadCertificate || refs[0].Target() != "api.github.com:443" {
		t.Fatalf("refusals: %+v", refs)
	}
}

// A request that asks to switch protocols (kubectl exec's SPDY or WebSocket, any WebSocket)
// goes to the login's host with the stand-in replaced, and once the host agrees, the
// connection carries the new protocol both ways until either side ends it.
func TestStandInConnectionCarriesAProtocolSwitch(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "echo" || !strings.EqualFold(req.Header.Get("Connection"), "upgrade") {
			http.Error(w, "no upgrade asked for: "+req.Header.Get("Connection")+"/"+req.Header.Get("Upgrade"), http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		rw.Flush()
		io.Copy(conn, rw) // what the client sends, back to it
	})
	req, _ := http.NewRequest("GET", "https://api.github.com/exec", nil)
	req.Header.Set("Authorization", "token "+ghStandIn)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	c := r.client(true)
	c.Timeout = 0 // a switched connection's body is writable only without one
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	stream, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		t.Fatalf("the switched connection is not writable: %T", resp.Body)
	}
	for _, msg := range []string{"ping\n", strings.Repeat("x", 100<<10)} {
		if _, err := io.WriteString(stream, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(stream, got); err != nil || string(got) != msg {
			t.Fatalf("echo: %v, %d bytes", err, len(got))
		}
	}
	if saw := r.saw("api.github.com"); len(saw) != 1 || saw[0] != "token "+ghReal {
		t.Fatalf("api.github.com saw %q", saw)
	}
}

// A login that signs in with a client certificate: the sandbox holds a stand-in certificate
// and key, and a connection that shows it to the proxy is shown to the host with the real
// one; a connection that shows none, or another, is shown with none.
func TestStandInClientCertificate(t *testing.T) {
	cluster, err := localca.Load(filepath.Join(t.TempDir(), "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	own := x509.NewCertPool()
	own.AddCert(cluster.Certificate())
	clientCA := tstest.ClientCert(t, "cluster clients", nil, true)
	real := tstest.ClientCert(t, "carol", &clientCA, false).TLS()
	standIn := tstest.ClientCert(t, "OpenWorker stand-in", nil, false).TLS()
	other := tstest.ClientCert(t, "someone else", nil, false).TLS()
	r := newStandInRigWith(t, []StandIn{
		{Login: "kubectl", Host: "kube.example", Port: 443, ClientCert: &real, StandInCert: standIn.Certificate[0], Roots: own},
	}, "kube.example:443")
	leaf, err := cluster.Leaf("kube.example")
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(clientCA.Cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		who := "anonymous"
		if len(req.TLS.PeerCertificates) > 0 {
			who = req.TLS.PeerCertificates[0].Subject.CommonName
		}
		io.WriteString(w, "as "+who)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: clients}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r.s.net.route("kube.example", 443, srv.Listener.Addr().String())

	pool := x509.NewCertPool()
	pool.AddCert(r.machine.Certificate())
	for _, c := range []struct {
		name string
		show []tls.Certificate
		want string
	}{
		{"stand_in", []tls.Certificate{standIn}, "as carol"},
		{"none", nil, "as anonymous"},
		{"another", []tls.Certificate{other}, "as anonymous"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &http.Transport{Proxy: http.ProxyURL(r.s.proxyURL()), TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: c.show}}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://kube.example/api")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != c.want {
				t.Fatalf("%d %q, want %q", resp.StatusCode, b, c.want)
			}
		})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Join(r.subs, " ") != "kubectl@kube.example" {
		t.Errorf("substitutions %q", r.subs)
	}
}

// A login can bring the authority its host's certificate is verified with, and the name that
// certificate gives (a cluster's own CA, and its tls-server-name): the proxy verifies that
// host with those alone, not the system's roots.
func TestStandInHostVerifiedWithTheLoginsOwnAuthority(t *testing.T) {
	cluster, err := localca.Load(filepath.Join(t.TempDir(), "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	own := x509.NewCertPool()
	own.AddCert(cluster.Certificate())
	const kubeStandIn, kubeReal = "kst-standinstandinstandin", "kst-REALREALREALREALREALR"
	r := newStandInRigWith(t, []StandIn{
		{Login: "kubectl", Host: "kube.example", Port: 443, StandIn: kubeStandIn, Real: kubeReal, Roots: own, ServerName: "kubernetes.default"},
		{Login: "kubectl", Host: "impostor.example", Port: 443, StandIn: kubeStandIn, Real: kubeReal, Roots: own},
	}, "api.github.com:443", "kube.example:443", "impostor.example:443")
	r.originAs("kube.example", "kubernetes.default", cluster, nil)
	// Signed by the authority the proxy trusts for every other host, but not the login's.
	r.origin("impostor.example", nil, nil)
	r.origin("api.github.com", nil, nil)
	c := r.client(true)

	resp, body, err := r.get(c, "https://kube.example/api", "Bearer "+kubeStandIn)
	if err != nil || resp.StatusCode != http.StatusOK || body != "hello from kube.example over HTTP/1.1" {
		t.Fatalf("kube.example: %v %v %q", err, resp, body)
	}
	if saw := r.saw("kube.example"); len(saw) != 1 || saw[0] != "Bearer "+kubeReal {
		t.Fatalf("kube.example saw %q", saw)
	}
	resp, body, err = r.get(c, "https://impostor.example/api", "Bearer "+kubeStandIn)
	if err != nil || resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "the certificate of impostor.example:443 did not verify") {
		t.Fatalf("impostor.example: %v %v %q", err, resp, body)
	}
	if saw := r.saw("impostor.example"); len(saw) != 0 {
		t.Fatalf("impostor.example got requests: %q", saw)
	}
	// gh's host is verified as before, with the proxy's roots.
	if resp, body, err := r.get(c, "https://api.github.com/user", "token "+ghStandIn); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("api.github.com: %v %v %q", err, resp, body)
	}
}

// A program that does not trust the machine's CA is refused by its own TLS stack; the proxy
// records why, naming the login and the way out, and the real host sees nothing.
func TestStandInClientThatDoesNotTrustTheCAIsToldWhy(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, nil)
	_, _, err := r.get(r.client(false), "https://api.github.com/user", "token "+ghStandIn)
	var uerr x509.UnknownAuthorityError
	if !errors.As(err, &uerr) {
		t.Fatalf("got %v, want the client's unknown authority error", err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		refs := r.refused()
		if len(refs) != 1 {
			return fmt.Errorf("refusals: %+v", refs)
		}
		ref := refs[0]
		for _, want := range []string{"api.github.com:443 is reached with the gh login's stand-in", "did not trust OpenWorker's certificate authority", "SSL_CERT_FILE", "or share gh by copying it"} {
			if !strings.Contains(ref.Reason, want) || ref.Header != StandInNotTrusted {
				return fmt.Errorf("refusal %q %q lacks %q", ref.Header, ref.Reason, want)
			}
		}
		return nil
	})
	if saw := r.saw("api.github.com"); len(saw) != 0 {
		t.Fatalf("the origin got requests: %q", saw)
	}
}

// A client that offers only HTTP/2 is refused with that reason.
func TestStandInOffersHTTP1Only(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, nil)
	tc := r.tlsThrough("api.github.com", "h2")
	if err := tc.Handshake(); err == nil {
		t.Fatalf("an HTTP/2-only client was accepted (protocol %q)", tc.ConnectionState().NegotiatedProtocol)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		refs := r.refused()
		if len(refs) != 1 || !strings.Contains(refs[0].Reason, "offered only HTTP/2, and OpenWorker carries the gh login's requests to api.github.com over HTTP/1.1 only") {
			return fmt.Errorf("refusals: %+v", refs)
		}
		return nil
	})
}

// Taking the host off the list closes a terminated connection, as it closes a tunnel.
func TestStandInConnectionClosesWhenItsHostIsNoLongerAllowed(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443")
	r.origin("api.github.com", nil, nil)
	tc := r.tlsThrough("api.github.com")
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	r.s.p.SetAllowList(nil)
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the connection stayed open: %v", err)
	}
}

// The relay terminates the same hosts for programs that ignore the proxy variables, and
// nothing else.
func TestStandInThroughTheRelay(t *testing.T) {
	r := newStandInRig(t, "api.github.com:443", "gist.github.com:443")
	r.origin("api.github.com", nil, nil)
	r.origin("gist.github.com", nil, nil)
	stub := map[netip.Addr]string{netip.MustParseAddr("198.18.0.1"): "api.github.com", netip.MustParseAddr("198.18.0.2"): "gist.github.com"}
	var mu sync.Mutex
	dsts := map[string]netip.AddrPort{}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.s.p.ServeRelay(l, Relay{
		Names: func(a netip.Addr) (string, func(), bool) { n, ok := stub[a]; return n, func() {}, ok },
		OriginalDst: func(c net.Conn) (netip.AddrPort, error) {
			for range 500 {
				mu.Lock()
				d, ok := dsts[c.RemoteAddr().String()]
				mu.Unlock()
				if ok {
					return d, nil
				}
				time.Sleep(time.Millisecond)
			}
			return netip.AddrPort{}, io.EOF
		}})
	pool := x509.NewCertPool()
	pool.AddCert(r.machine.Certificate())
	pool.AddCert(r.public.Certificate())
	for _, tc := range []struct{ name, addr, want string }{
		{"api.github.com", "198.18.0.1:443", "token " + ghReal},
		{"gist.github.com", "198.18.0.2:443", "token " + ghStandIn},
	} {
		tr := &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				c, err := net.Dial("tcp4", l.Addr().String())
				if err == nil {
					mu.Lock()
					dsts[c.LocalAddr().String()] = netip.MustParseAddrPort(tc.addr)
					mu.Unlock()
				}
				return c, err
			},
			TLSClientConfig: &tls.Config{RootCAs: pool},
		}
		req, _ := http.NewRequest("GET", "https://"+tc.name+"/user", nil)
		req.Header.Set("Authorization", "token "+ghStandIn)
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		if saw := r.saw(tc.name); len(saw) != 1 || saw[0] != tc.want {
			t.Fatalf("%s saw %q, want %q", tc.name, saw, tc.want)
		}
	}
}

func TestStandInsAreChecked(t *testing.T) {
	cert := func(string) (*tls.Certificate, error) { return nil, errors.New("none") }
	cases := []struct {
		name string
		s    StandIns
		want string
	}{
		{"no_certificate", StandIns{Logins: []StandIn{{Login: "gh", Host: "api.github.com", Port: 443, StandIn: "a", Real: "b"}}}, "need a certificate"},
		{"wildcard", StandIns{Certificate: cert, Logins: []StandIn{{Login: "gh", Host: "*.github.com", Port: 443, StandIn: "a", Real: "b"}}}, "is a wildcard"},
		{"same", StandIns{Certificate: cert, Logins: []StandIn{{Login: "gh", Host: "api.github.com", Port: 443, StandIn: "a", Real: "a"}}}, "no stand-in distinct"},
		{"empty_real", StandIns{Certificate: cert, Logins: []StandIn{{Login: "gh", Host: "api.github.com", Port: 443, StandIn: "a"}}}, "no stand-in distinct"},
		{"aws_without_its_key_id", StandIns{Certificate: cert, Logins: []StandIn{{Login: "aws-credentials", Host: "*.amazonaws.com", Port: 443,
			SigV4: &SigV4{StandInSecret: "a", Secret: "b"}}}}, "needs its access key's id"},
		{"aws_stand_in_is_its_secret", StandIns{Certificate: cert, Logins: []StandIn{{Login: "aws-credentials", Host: "*.amazonaws.com", Port: 443,
			SigV4: &SigV4{AccessKeyID: "AKID", StandInSecret: "b", Secret: "b"}}}}, "stand-in secret distinct"},
		{"two_authorities", StandIns{Certificate: cert, Logins: []StandIn{
			{Login: "kubectl", Host: "kube.example", Port: 443, StandIn: "a", Real: "b", Roots: x509.NewCertPool()},
			{Login: "kubectl", Host: "kube.example", Port: 443, StandIn: "c", Real: "d"},
		}}, "verified two ways"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(Options{Token: NewToken(), StandIns: &c.s})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
