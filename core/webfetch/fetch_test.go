package webfetch

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"go.uber.org/goleak"
)

// TestFetch fetches from a loopback origin through an entry naming its address, and checks
// what each kind of content becomes.
func TestFetch(t *testing.T) {
	s := origin(t)
	s.Start()
	defer s.Close()
	base := "http://" + s.Listener.Addr().String()
	p := port(t, s)
	tests := []struct {
		name, path string
		maxBytes   int64
		want       Result
	}{
		{"html", "/html", 0, Result{Status: 200, ContentType: "text/html", Title: "A test page", Text: testPageText, Size: int64(len(testPage))}},
		{"plain_text", "/text", 0, Result{Status: 200, ContentType: "text/plain", Text: "hello\n  world <b>not markup</b>\n", Size: 32}},
		{"json", "/json", 0, Result{Status: 200, ContentType: "application/json", Text: `{"name": "café", "list": [1, 2]}`, Size: 33}},
		{"charset_latin1", "/latin1", 0, Result{Status: 200, ContentType: "text/plain", Text: "café €", Size: 6}},
		{"charset_in_meta", "/meta-latin1", 0, Result{Status: 200, ContentType: "text/html", Title: "Menü", Text: "grüße", Size: 92}},
		{"binary", "/bin", 0, Result{Status: 200, ContentType: "image/png", Binary: true, Text: "[binary content: image/png, 2048 bytes, not shown]", Size: 2048}},
		{"binary_sniffed", "/sniffed", 0, Result{Status: 200, ContentType: "application/octet-stream", Binary: true, Text: "[binary content: application/octet-stream, 10 bytes, not shown]", Size: 10}},
		{"not_found_is_a_result", "/status", 0, Result{Status: 404, ContentType: "text/plain", Text: "no such page", Size: 12}},
		{"size_limit", "/big", 1000, Result{Status: 200, ContentType: "text/plain", Text: strings.Repeat("0123456789", 100), Truncated: true, Size: 100000}},
		{"size_limit_mid_character", "/accents", 5, Result{Status: 200, ContentType: "text/plain", Text: "éé", Truncated: true, Size: 10}},
		{"size_limit_latin1", "/latin1", 4, Result{Status: 200, ContentType: "text/plain", Text: "café", Truncated: true, Size: 6}},
		{"size_limit_binary", "/bigbin", 1000, Result{Status: 200, ContentType: "application/octet-stream", Binary: true, Truncated: true,
			Text: "[binary content: application/octet-stream, more than 1000 bytes, not shown]", Size: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNet(t)
			r, err := Fetch(context.Background(), base+tt.path, Options{
				Decide: allowing(t, "127.0.0.1:"+strconv.Itoa(p)), Resolver: n, Dial: n.Dial, MaxBytes: tt.maxBytes,
			})
			if err != nil {
				t.Fatalf("Fetch(%s): %v", tt.path, err)
			}
			tt.want.URL = base + tt.path
			if !equalResult(r, &tt.want) {
				t.Fatalf("Fetch(%s) =\n%+v\nwant\n%+v", tt.path, *r, tt.want)
			}
			if strings.Contains(r.Text, "SECRET") {
				t.Fatalf("the binary body leaked into the text: %q", r.Text)
			}
			if got := n.lookups(); len(got) != 0 {
				t.Fatalf("an address literal was looked up: %q", got)
			}
			if got := n.dials(); !slices.Equal(got, []string{"127.0.0.1:" + strconv.Itoa(p)}) {
				t.Fatalf("dialled %q, want only the origin's address", got)
			}
		})
	}
}

func equalResult(a, b *Result) bool {
	return a.URL == b.URL && a.Status == b.Status && a.ContentType == b.ContentType && a.Title == b.Title &&
		a.Text == b.Text && a.Truncated == b.Truncated && a.Binary == b.Binary && a.Size == b.Size &&
		slices.Equal(a.Redirects, b.Redirects)
}

// TestLocalhostEntry reaches loopback through a localhost entry without asking a resolver,
// as the proxy does.
func TestLocalhostEntry(t *testing.T) {
	s := origin(t)
	s.Start()
	defer s.Close()
	n := newFakeNet(t)
	p := port(t, s)
	r, err := Fetch(context.Background(), "http://localhost:"+strconv.Itoa(p)+"/whoami", Options{
		Decide: allowing(t, "localhost:"+strconv.Itoa(p)), Resolver: n, Dial: n.Dial, UserAgent: "test-agent/1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sni= host=localhost:" + strconv.Itoa(p) + " ua=test-agent/1"; r.Text != want {
		t.Fatalf("the origin saw %q, want %q", r.Text, want)
	}
	if got := n.lookups(); len(got) != 0 {
		t.Fatalf("localhost was looked up: %q", got)
	}
}

// TestRefused checks every refusal: what error, naming what, and that nothing refused was
// dialled.
func TestRefused(t *testing.T) {
	s := origin(t)
	s.Start()
	defer s.Close()
	o := s.Listener.Addr().String()
	p := port(t, s)
	ps := strconv.Itoa(p)
	base := "http://" + o
	allowed := []string{"127.0.0.1:" + ps, "rebind.example:" + ps, "mixed.example:" + ps, "mapped.example:" + ps,
		"ten.example:" + ps, "meta.example:" + ps, "*.wild.example:" + ps, "hop.example:" + ps, "six.example:" + ps, "own.example:" + ps, "unsure.example:" + ps}
	// 203.0.113.7 stands for an address of this machine's own; the kernel cannot be asked about
	// 203.0.113.8.
	own := func(a netip.Addr) (bool, error) {
		if a == netip.MustParseAddr("203.0.113.8") {
			return false, errors.New("too many open files")
		}
		return a == netip.MustParseAddr("203.0.113.7"), nil
	}
	type want struct {
		blocked *BlockedError
		private *PrivateError
		is      error
		says    []string
		dials   int
	}
	tests := []struct {
		name, url string
		opts      Options
		want      want
	}{
		{"not_on_list", "http://127.0.0.2:" + ps + "/text", Options{},
			want{blocked: &BlockedError{Host: "127.0.0.2", Port: p, Hop: 0}, says: []string{"127.0.0.2:" + ps + " is not on this session's allow list", hosts.HowToAllow}}},
		{"default_port_not_on_list", "https://blocked.example/", Options{},
			want{blocked: &BlockedError{Host: "blocked.example", Port: 443}, says: []string{"blocked.example:443 is not on"}}},
		{"redirect_to_blocked", base + "/redirect?to=http://blocked.example:" + ps + "/text", Options{},
			want{blocked: &BlockedError{Host: "blocked.example", Port: p, Hop: 1}, says: []string{"redirected", "blocked.example:" + ps + " is not on"}, dials: 1}},
		{"redirect_to_blocked_port", base + "/redirect?to=http://127.0.0.1:1/", Options{},
			want{blocked: &BlockedError{Host: "127.0.0.1", Port: 1, Hop: 1}, says: []string{"127.0.0.1:1 is not on"}, dials: 1}},
		{"redirect_chain_to_blocked", base + "/redirect?to=" + "http://hop.example:" + ps + "/redirect%3Fto=http://blocked.example:" + ps + "/", Options{},
			want{blocked: &BlockedError{Host: "blocked.example", Port: p, Hop: 2}, says: []string{"blocked.example:" + ps}, dials: 2}},
		{"name_to_loopback", "http://rebind.example:" + ps + "/text", Options{},
			want{private: &PrivateError{Host: "rebind.example", Port: p, Addr: netip.MustParseAddr("127.0.0.1"), Class: hosts.Loopback},
				says: []string{"rebind.example:" + ps + " resolves to 127.0.0.1, a loopback address", "allow the address itself (127.0.0.1:" + ps + ")"}}},
		{"name_with_one_loopback_address", "http://mixed.example:" + ps + "/text", Options{},
			want{private: &PrivateError{Host: "mixed.example", Port: p, Addr: netip.MustParseAddr("127.0.0.1"), Class: hosts.Loopback}, says: []string{"resolves to 127.0.0.1"}}},
		{"name_to_mapped_loopback", "http://mapped.example:" + ps + "/text", Options{},
			want{private: &PrivateError{Host: "mapped.example", Port: p, Addr: netip.MustParseAddr("127.0.0.1"), Class: hosts.Loopback}, says: []string{"resolves to 127.0.0.1"}}},
		{"name_to_private", "http://ten.example:" + ps + "/", Options{},
			want{private: &PrivateError{Host: "ten.example", Port: p, Addr: netip.MustParseAddr("10.1.2.3"), Class: hosts.Private}, says: []string{"10.1.2.3, a private address"}}},
		{"name_to_metadata", "http://meta.example:" + ps + "/", Options{},
			want{private: &PrivateError{Host: "meta.example", Port: p, Addr: netip.MustParseAddr("169.254.169.254"), Class: hosts.LinkLocal}, says: []string{"link-local"}}},
		{"name_to_nat64_loopback", "http://six.example:" + ps + "/", Options{},
			want{private: &PrivateError{Host: "six.example", Port: p, Addr: netip.MustParseAddr("64:ff9b::7f00:1"), Class: hosts.Loopback}, says: []string{"64:ff9b::7f00:1"}}},
		{"name_to_this_machine", "http://own.example:" + ps + "/", Options{OwnAddr: own},
			want{private: &PrivateError{Host: "own.example", Port: p, Addr: netip.MustParseAddr("203.0.113.7"), Class: hosts.ThisMachine},
				says: []string{"resolves to 203.0.113.7, a local (this machine's own) address", "allow the address itself (203.0.113.7:" + ps + ")"}}},
		{"kernel_cannot_say", "http://unsure.example:" + ps + "/", Options{OwnAddr: own},
			want{private: &PrivateError{Host: "unsure.example", Port: p, Addr: netip.MustParseAddr("203.0.113.8"), Class: hosts.ThisMachine},
				says: []string{"taken for an address of this machine, since the kernel could not say whether it is one (too many open files)"}}},
		{"wildcard_to_loopback", "http://a.wild.example:" + ps + "/", Options{},
			want{private: &PrivateError{Host: "a.wild.example", Port: p, Addr: netip.MustParseAddr("127.0.0.1"), Class: hosts.Loopback}}},
		{"redirect_to_loopback_name", base + "/redirect?to=http://rebind.example:" + ps + "/text", Options{},
			want{private: &PrivateError{Host: "rebind.example", Port: p, Hop: 1, Addr: netip.MustParseAddr("127.0.0.1"), Class: hosts.Loopback}, says: []string{"redirected"}, dials: 1}},
		{"forbidden_address", base + "/text", Options{Forbidden: func(a netip.AddrPort) bool { return a.String() == o }},
			want{private: &PrivateError{Host: "127.0.0.1", Port: p, Addr: netip.MustParseAddr("127.0.0.1"), Class: hosts.Loopback, Forbidden: true}, says: []string{"the app's own services"}}},
		{"unknown_name", "http://nowhere.wild.example:" + ps + "/", Options{},
			want{says: []string{"could not find nowhere.wild.example", "check the name"}}},
		{"scheme_ftp", "ftp://127.0.0.1:" + ps + "/", Options{}, want{is: ErrScheme, says: []string{`"ftp"`, "only http and https"}}},
		{"scheme_file", "file:///etc/passwd", Options{}, want{is: ErrScheme, says: []string{"only http and https"}}},
		{"scheme_javascript", "javascript:alert(1)", Options{}, want{is: ErrScheme}},
		{"scheme_none", "127.0.0.1:" + ps + "/text", Options{}, want{is: ErrScheme}},
		{"no_host", "http:///text", Options{}, want{says: []string{"has no host"}}},
		{"not_a_url", "http://[::1/", Options{}, want{says: []string{"is not a URL"}}},
		{"userinfo", "http://me:secret@127.0.0.1:" + ps + "/text", Options{}, want{is: ErrUserinfo, says: []string{"user name or password"}}},
		{"redirect_to_file", base + "/redirect?to=file:///etc/passwd", Options{}, want{is: ErrScheme, says: []string{"redirected"}, dials: 1}},
		{"redirect_with_userinfo", base + "/redirect?to=http://u:p@127.0.0.1:" + ps + "/text", Options{}, want{is: ErrUserinfo, dials: 1}},
		{"too_many_redirects", base + "/chain/10", Options{MaxRedirects: 3}, want{is: ErrTooManyRedirects, says: []string{"more than 3 redirects"}, dials: 4}},
		{"no_redirects", base + "/chain/1", Options{MaxRedirects: -1}, want{is: ErrTooManyRedirects, says: []string{"more than 0 redirects"}, dials: 1}},
		{"default_redirect_limit", base + "/chain/6", Options{}, want{is: ErrTooManyRedirects, says: []string{"more than 5 redirects"}, dials: 6}},
		{"zone", "http://[fe80::1%25eth0]:" + ps + "/", Options{}, want{says: []string{"zone"}}},
		{"bad_port", "http://127.0.0.1:0/", Options{}, want{says: []string{"port"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNet(t)
			n.resolveTo("rebind.example", "127.0.0.1")
			n.resolveTo("mixed.example", "203.0.113.9", "127.0.0.1")
			n.resolveTo("mapped.example", "::ffff:127.0.0.1")
			n.resolveTo("ten.example", "10.1.2.3")
			n.resolveTo("meta.example", "169.254.169.254")
			n.resolveTo("six.example", "64:ff9b::7f00:1")
			n.resolveTo("a.wild.example", "127.0.0.1")
			n.resolveTo("hop.example", "203.0.113.5")
			n.resolveTo("own.example", "203.0.113.9", "203.0.113.7")
			n.resolveTo("unsure.example", "203.0.113.8")
			n.route("203.0.113.5", p, o)
			opts := tt.opts
			opts.Decide, opts.Resolver, opts.Dial = allowing(t, allowed...), n, n.Dial
			leaks := goleak.IgnoreCurrent()
			r, err := Fetch(context.Background(), tt.url, opts)
			goleak.VerifyNone(t, leaks) // every hop's connection is closed, the origin's side too
			if err == nil {
				t.Fatalf("Fetch(%s) = %+v, want a refusal", tt.url, r)
			}
			if r != nil {
				t.Fatalf("Fetch(%s) returned a result with its error %v", tt.url, err)
			}
			var be *BlockedError
			if gotBlocked := errors.As(err, &be); gotBlocked != (tt.want.blocked != nil) {
				t.Fatalf("Fetch(%s): %v (%T); want a BlockedError: %v", tt.url, err, err, tt.want.blocked != nil)
			} else if gotBlocked {
				if be.Host != tt.want.blocked.Host || be.Port != tt.want.blocked.Port || be.Hop != tt.want.blocked.Hop || be.Decision.Allowed || be.Decision.Host != be.Host {
					t.Fatalf("Fetch(%s) refused %+v, want host %s port %d hop %d", tt.url, *be, tt.want.blocked.Host, tt.want.blocked.Port, tt.want.blocked.Hop)
				}
			}
			var pe *PrivateError
			if gotPrivate := errors.As(err, &pe); gotPrivate != (tt.want.private != nil) {
				t.Fatalf("Fetch(%s): %v (%T); want a PrivateError: %v", tt.url, err, err, tt.want.private != nil)
			} else if gotPrivate {
				w := tt.want.private
				if pe.Host != w.Host || pe.Port != w.Port || pe.Hop != w.Hop || pe.Addr != w.Addr || pe.Class != w.Class || pe.Forbidden != w.Forbidden {
					t.Fatalf("Fetch(%s) refused %+v, want %+v", tt.url, *pe, *w)
				}
			}
			if tt.want.is != nil && !errors.Is(err, tt.want.is) {
				t.Fatalf("Fetch(%s): %v, want %v", tt.url, err, tt.want.is)
			}
			for _, s := range tt.want.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Fetch(%s): %q does not say %q", tt.url, err, s)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error repeats the URL's password: %q", err)
			}
			if d := n.dials(); len(d) != tt.want.dials {
				t.Fatalf("Fetch(%s) dialled %q, want %d dials (only the hops before the refusal)", tt.url, d, tt.want.dials)
			}
		})
	}
}

// TestRedirects follows redirects of every kind, re-deciding each hop.
func TestRedirects(t *testing.T) {
	s := origin(t)
	s.Start()
	defer s.Close()
	o := s.Listener.Addr().String()
	p := port(t, s)
	ps := strconv.Itoa(p)
	base := "http://" + o
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			n := newFakeNet(t)
			n.resolveTo("hop.example", "203.0.113.5")
			n.resolveTo("own.example", "203.0.113.9", "203.0.113.7")
			n.resolveTo("unsure.example", "203.0.113.8")
			n.route("203.0.113.5", p, o)
			var mu sync.Mutex
			var decided []string
			allow := allowing(t, "127.0.0.1:"+ps, "hop.example:"+ps)
			decide := func(host string, port int) hosts.Decision {
				mu.Lock()
				decided = append(decided, host+":"+strconv.Itoa(port))
				mu.Unlock()
				return allow(host, port)
			}
			start := base + "/redirect?code=" + strconv.Itoa(code) + "&to=http://hop.example:" + ps + "/chain/2"
			leaks := goleak.IgnoreCurrent()
			r, err := Fetch(context.Background(), start, Options{Decide: decide, Resolver: n, Dial: n.Dial})
			goleak.VerifyNone(t, leaks)
			if err != nil {
				t.Fatal(err)
			}
			hop := "http://hop.example:" + ps
			want := []string{hop + "/chain/2", hop + "/chain/1", hop + "/chain/0"}
			if r.URL != want[2] || r.Text != "end of the chain" || !slices.Equal(r.Redirects, want) {
				t.Fatalf("Fetch = %+v, want the end of the chain via %q", *r, want)
			}
			wantDecided := []string{"127.0.0.1:" + ps, "hop.example:" + ps, "hop.example:" + ps, "hop.example:" + ps}
			if !slices.Equal(decided, wantDecided) {
				t.Fatalf("decided %q, want every hop decided: %q", decided, wantDecided)
			}
			if l := n.lookups(); !slices.Equal(l, []string{"hop.example", "hop.example", "hop.example"}) {
				t.Fatalf("looked up %q, want hop.example once per hop", l)
			}
			wantDials := []string{o, "203.0.113.5:" + ps, "203.0.113.5:" + ps, "203.0.113.5:" + ps}
			if d := n.dials(); !slices.Equal(d, wantDials) {
				t.Fatalf("dialled %q, want %q", d, wantDials)
			}
		})
	}
}

// TestTimeLimit bounds the whole fetch by Options.Timeout, whether the origin stalls before
// or after it starts answering, and by the caller's context.
func TestTimeLimit(t *testing.T) {
	stall := make(chan struct{})
	defer close(stall)
	s := origin(t)
	s.Config.Handler.(*http.ServeMux).HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stall:
		}
	})
	s.Start()
	defer s.Close()
	ps := strconv.Itoa(port(t, s))
	base := "http://" + s.Listener.Addr().String()
	for _, path := range []string{"/slow", "/stall"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			n := newFakeNet(t)
			start := time.Now()
			leaks := goleak.IgnoreCurrent()
			defer goleak.VerifyNone(t, leaks)
			_, err := Fetch(context.Background(), base+path, Options{
				Decide: allowing(t, "127.0.0.1:"+ps), Resolver: n, Dial: n.Dial, Timeout: 300 * time.Millisecond,
			})
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish within 300ms") {
				t.Fatalf("Fetch(%s): %v, want it stopped at its time limit", path, err)
			}
			if e := time.Since(start); e > 20*time.Second {
				t.Fatalf("Fetch(%s) took %v to give up", path, e)
			}
		})
	}
	t.Run("caller_cancels", func(t *testing.T) {
		n := newFakeNet(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := Fetch(ctx, base+"/stall", Options{Decide: allowing(t, "127.0.0.1:"+ps), Resolver: n, Dial: n.Dial})
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
			t.Fatalf("Fetch: %v, want it cancelled", err)
		}
	})
}

// TestHTTPSByName fetches an https URL by name through the injected resolver: the dial gets
// the checked address, the handshake the name (SNI and certificate verification), the request
// the name as its Host.
func TestHTTPSByName(t *testing.T) {
	s := origin(t)
	s.StartTLS()
	defer s.Close()
	o := s.Listener.Addr().String()
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	tests := []struct {
		name, host string // httptest's certificate is for example.com and *.example.com
		roots      *x509.CertPool
		errSays    string
	}{
		{"by_name", "site.example.com", roots, ""},
		{"name_not_in_certificate", "other.example", roots, "certificate"},
		{"untrusted_certificate", "site.example.com", nil, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFakeNet(t)
			n.resolveTo(tt.host, "203.0.113.10")
			n.route("203.0.113.10", 443, o)
			r, err := Fetch(context.Background(), "https://"+tt.host+"/whoami", Options{
				Decide: allowing(t, tt.host), Resolver: n, Dial: n.Dial, RootCAs: tt.roots,
			})
			if d := n.dials(); !slices.Equal(d, []string{"203.0.113.10:443"}) {
				t.Fatalf("dialled %q, want only the checked address 203.0.113.10:443", d)
			}
			if tt.errSays != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSays) {
					t.Fatalf("Fetch: %v, %+v; want an error about the %s", err, r, tt.errSays)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "sni=" + tt.host + " host=" + tt.host + " ua=" + DefaultUserAgent; r.Text != want {
				t.Fatalf("the origin saw %q, want %q", r.Text, want)
			}
		})
	}
}

// TestResolvesOnce gives Fetch a name whose second answer rebinds it to loopback: only the
// first, checked, answer is ever dialled.
func TestResolvesOnce(t *testing.T) {
	s := origin(t)
	s.Start()
	defer s.Close()
	p := port(t, s)
	n := newFakeNet(t)
	n.route("203.0.113.7", p, s.Listener.Addr().String())
	r := &rebinder{fakeNet: n}
	res, err := Fetch(context.Background(), "http://rebinding.example:"+strconv.Itoa(p)+"/text", Options{
		Decide: allowing(t, "rebinding.example:"+strconv.Itoa(p)), Resolver: r, Dial: n.Dial,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || r.calls != 1 {
		t.Fatalf("Fetch = %+v after %d lookups, want one lookup", *res, r.calls)
	}
	if d := n.dials(); !slices.Equal(d, []string{"203.0.113.7:" + strconv.Itoa(p)}) {
		t.Fatalf("dialled %q, want only the checked address", d)
	}
}

// rebinder answers a public address once, then loopback.
type rebinder struct {
	*fakeNet
	calls int
}

func (r *rebinder) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.calls++
	if r.calls == 1 {
		return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestTransportIgnoresEnvironment: no proxy from the environment, whose proxy would be sent
// the request in place of the checked origin; and no HTTP/2, whose connection reuse would
// outlive the hop's decision.
func TestTransportIgnoresEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	tr := newTransport(nil, "example.com", nil)
	if tr.Proxy != nil {
		t.Fatal("the transport takes a proxy")
	}
	if tr.TLSNextProto == nil || tr.ForceAttemptHTTP2 || !tr.DisableKeepAlives {
		t.Fatalf("the transport may reuse connections or speak HTTP/2: %+v", tr)
	}
}

// TestEndlessBody stops reading at MaxBytes: an origin that never stops sending gets a
// truncated result, not a fetch that reads until its time runs out.
func TestEndlessBody(t *testing.T) {
	s := origin(t)
	s.Config.Handler.(*http.ServeMux).HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("y\n", 4096))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	s.Start()
	defer s.Close()
	n := newFakeNet(t)
	ps := strconv.Itoa(port(t, s))
	r, err := Fetch(context.Background(), "http://"+s.Listener.Addr().String()+"/endless", Options{
		Decide: allowing(t, "127.0.0.1:"+ps), Resolver: n, Dial: n.Dial, MaxBytes: 1 << 20, Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || len(r.Text) != 1<<20 || r.Size != 1<<20 {
		t.Fatalf("Fetch = %d bytes of text, size %d, truncated %v; want 1 MiB, truncated", len(r.Text), r.Size, r.Truncated)
	}
}

// TestHowToAllow ends a refusal with the caller's hint, naming the target to allow.
func TestHowToAllow(t *testing.T) {
	n := newFakeNet(t)
	n.resolveTo("rebind.example", "127.0.0.1")
	how := func(target string) string { return "run `openworker access S --allow " + target + "`" }
	opts := Options{Decide: allowing(t, "rebind.example:8080"), Resolver: n, Dial: n.Dial, HowToAllow: how}
	for url, want := range map[string]string{
		"http://blocked.example:8080/": "blocked.example:8080 is not on this session's allow list; run `openworker access S --allow blocked.example:8080`",
		"http://rebind.example:8080/":  "allow the address itself (127.0.0.1:8080): run `openworker access S --allow 127.0.0.1:8080`",
	} {
		if _, err := Fetch(context.Background(), url, opts); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("Fetch(%s): %v, want it to end %q", url, err, want)
		}
	}
	if d := n.dials(); len(d) != 0 {
		t.Fatalf("dialled %q", d)
	}
}

// TestInternationalName decides, resolves and sends an internationalised name in its
// canonical (punycode) form.
func TestInternationalName(t *testing.T) {
	s := origin(t)
	s.Start()
	defer s.Close()
	p := port(t, s)
	ps := strconv.Itoa(p)
	n := newFakeNet(t)
	n.resolveTo("xn--bcher-kva.example", "203.0.113.8")
	n.route("203.0.113.8", p, s.Listener.Addr().String())
	r, err := Fetch(context.Background(), "http://Bücher.example:"+ps+"/whoami", Options{
		Decide: allowing(t, "bücher.example:"+ps), Resolver: n, Dial: n.Dial,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sni= host=xn--bcher-kva.example:" + ps + " ua=" + DefaultUserAgent; r.Text != want {
		t.Fatalf("the origin saw %q, want %q", r.Text, want)
	}
	if l := n.lookups(); !slices.Equal(l, []string{"xn--bcher-kva.example"}) {
		t.Fatalf("looked up %q", l)
	}
}

// TestLiteralIPv6Loopback reaches an origin on [::1] through an entry naming it.
func TestLiteralIPv6Loopback(t *testing.T) {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	s := origin(t)
	s.Listener.Close()
	s.Listener = l
	s.Start()
	defer s.Close()
	ps := strconv.Itoa(port(t, s))
	n := newFakeNet(t)
	r, err := Fetch(context.Background(), "http://[::1]:"+ps+"/whoami", Options{Decide: allowing(t, "[::1]:"+ps), Resolver: n, Dial: n.Dial})
	if err != nil {
		t.Fatal(err)
	}
	if want := "sni= host=[::1]:" + ps + " ua=" + DefaultUserAgent; r.Text != want {
		t.Fatalf("the origin saw %q, want %q", r.Text, want)
	}
	if d := n.dials(); !slices.Equal(d, []string{"[::1]:" + ps}) {
		t.Fatalf("dialled %q", d)
	}
}

// TestNeedsDecide: a fetch without an allow list is refused, never allowed.
func TestNeedsDecide(t *testing.T) {
	_, err := Fetch(context.Background(), "http://127.0.0.1:1/", Options{})
	if err == nil || !strings.Contains(err.Error(), "allow list") {
		t.Fatalf("Fetch without Decide: %v", err)
	}
}
