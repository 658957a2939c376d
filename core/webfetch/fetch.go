// Package webfetch is the coworker's web fetch: it gets one http or https URL from the core,
// outside the sandbox, under the same allow list and the same address rules as the session's
// proxy, and returns the page as text a person or an agent reads. Every hop of a redirect is
// decided again; a name is resolved once per hop, every address it leads to is checked, and only
// a checked address is dialled. It is not a browser: it runs no script and fetches nothing a page
// refers to. Nor does it decide anything itself: the allow list, asking a person and the cards
// belong to its caller.
package webfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/ownaddr"
)

// Defaults for the zero Options.
const (
	DefaultMaxBytes     = 5 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "OpenWorker-WebFetch/1"
)

// maxHeaderBytes bounds a response's header, which no other limit covers.
const maxHeaderBytes = 64 << 10

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Fetch. Decide is required; the zero value of every other field means its
// default.
type Options struct {
	// Decide is the allow list's verdict on one hop's host (as in the URL) and port. It is
	// asked again for every hop of a redirect.
	Decide func(host string, port int) hosts.Decision
	// Resolver looks up a hop's name, once. The default is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to an address Fetch has checked ("203.0.113.7:443"), never to a name.
	// The default is a net.Dialer.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Forbidden, when set, names addresses never fetched from, whatever the entry: the
	// proxy's own listener and the app's own services.
	Forbidden func(netip.AddrPort) bool
	// OwnAddr says whether an address is this machine's own, which a fetch then treats as
	// loopback: reached only through an entry that names it. The default is ownaddr.Is, the
	// kernel's answer at the moment of the fetch.
	OwnAddr func(netip.Addr) (bool, error)
	// MaxBytes bounds the body read; past it the text is cut and Result.Truncated set.
	// The default is DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds the whole fetch, every hop included. The default is DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed: 0 means DefaultMaxRedirects, a
	// negative number none.
	MaxRedirects int
	// HowToAllow, when set, says how a person allows a refused site (given as host:port)
	// where the fetch was asked for; refusals end with it. The default is hosts.HowToAllow.
	HowToAllow func(target string) string
	// UserAgent is sent with every request; the default is DefaultUserAgent.
	UserAgent string
	// RootCAs verify https origins; nil means the system's roots.
	RootCAs *x509.CertPool
}

// Result is what a fetch got.
type Result struct {
	// URL is the address the content came from: the one asked for, or the last redirect's.
	URL string
	// Status is the final response's status code; a 404 is a result, not an error.
	Status int
	// ContentType is the media type, lower case and without parameters ("text/html"),
	// sniffed when the response named none.
	ContentType string
	// Title is an HTML page's <title>.
	Title string
	// Text is the content as text: an HTML page's readable text, other text as it is, or,
	// for binary content, a one-line summary of its type and size.
	Text string
	// Truncated is true when the body was longer than Options.MaxBytes, of which only that
	// much was read.
	Truncated bool
	// Binary is true when the content is not text; Text then only summarises it.
	Binary bool
	// Size is the body's length in bytes: as the response declared it, else as read (at
	// most Options.MaxBytes when Truncated).
	Size int64
	// Redirects are the URLs redirected to, in order; the last is URL.
	Redirects []string
}

// Errors a caller may test for with errors.Is.
var (
	ErrScheme           = errors.New("only http and https URLs can be fetched")
	ErrUserinfo         = errors.New("the URL has a user name or password, which a web fetch does not send; remove it from the URL")
	ErrTooManyRedirects = errors.New("too many redirects")
)

// BlockedError is a hop whose host and port the allow list does not admit: what a caller
// makes a card of.
type BlockedError struct {
	// URL is the URL the fetch was asked for; HopURL the hop refused (the same when Hop is 0).
	URL, HopURL string
	// Host is the canonical host refused, Port its port.
	Host string
	Port int
	// Hop is 0 for the URL asked for, n for the n-th redirect.
	Hop int
	// Decision is the allow list's verdict.
	Decision hosts.Decision

	how func(target string) string
}

func (e *BlockedError) Error() string {
	return refusedAt(e.URL, e.HopURL, e.Hop) + e.Decision.Explain(e.how)
}

// PrivateError is a hop refused for where its name leads: to a loopback, private, link-local
// or other special address, refused for any entry but one naming that address, or to an
// address that is Forbidden whatever the entry. It is the proxy's refusal, word for word where
// it can be.
type PrivateError struct {
	URL, HopURL string
	Host        string
	Port        int
	Hop         int
	// Addr is the address that decided the refusal, and Class its kind. Unsure says why an
	// address was taken for this machine's own without the kernel's word for it.
	Addr   netip.Addr
	Class  hosts.AddrClass
	Unsure error
	// Forbidden is true when Addr is one of Options.Forbidden.
	Forbidden bool

	how func(target string) string
}

func (e *PrivateError) Error() string {
	target := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	at := netip.AddrPortFrom(e.Addr, uint16(e.Port)).String()
	if e.Forbidden {
		return refusedAt(e.URL, e.HopURL, e.Hop) + target + " leads to " + at +
			", the proxy's own address or one of the app's own services, which a web fetch may never reach, whatever the entry"
	}
	what := "a " + e.Class.String() + " address"
	if e.Unsure != nil {
		what = "taken for an address of this machine, since the kernel could not say whether it is one (" + e.Unsure.Error() + ")"
	}
	return refusedAt(e.URL, e.HopURL, e.Hop) + target + " resolves to " + e.Addr.String() + ", " + what +
		", which a web fetch does not reach through a name; to reach it, allow the address itself (" + at + "): " +
		howToAllow(e.how, at)
}

func howToAllow(how func(string) string, target string) string {
	if how != nil {
		return how(target)
	}
	return hosts.HowToAllow
}

// refusal is a refusal already in the words a person reads.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }

func refusedAt(u, hop string, n int) string {
	if n == 0 {
		return "web fetch of " + u + " refused: "
	}
	return "web fetch of " + u + " was redirected to " + hop + ", which is refused: "
}

// Fetch gets rawURL under o and returns its content as text. A refusal is a *BlockedError,
// a *PrivateError, or an error that is ErrScheme, ErrUserinfo or ErrTooManyRedirects; a fetch
// that ran out of time wraps context.DeadlineExceeded. Every error says what happened and
// what to do; none repeats a password.
func Fetch(ctx context.Context, rawURL string, o Options) (*Result, error) {
	if o.Decide == nil {
		return nil, errors.New("web fetch has no allow list to decide with; this is a bug in its caller")
	}
	o.setDefaults()
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	start := u.Redacted()
	fctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var redirects []string
	for hop := 0; ; hop++ {
		resp, err := o.get(fctx, u, start, hop)
		if err != nil {
			return nil, o.explain(ctx, fctx, start, err)
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			r, err := o.read(resp)
			resp.Body.Close()
			if err != nil {
				return nil, o.explain(ctx, fctx, start, fmt.Errorf("reading %s: %w", u.Redacted(), err))
			}
			r.URL, r.Redirects = u.String(), redirects
			return r, nil
		}
		resp.Body.Close()
		next, err := u.Parse(loc)
		if err != nil {
			return nil, fmt.Errorf("web fetch of %s was redirected to %q, which is not a URL; fetch the page it should lead to directly", start, loc)
		}
		if err := checkURL(next); err != nil {
			return nil, fmt.Errorf("web fetch of %s was redirected to %s, which is refused: %w", start, next.Redacted(), err)
		}
		if len(redirects) >= o.MaxRedirects {
			return nil, fmt.Errorf("web fetch of %s: %w: more than %d redirects, the last to %s; fetch the page it should end at directly",
				start, ErrTooManyRedirects, o.MaxRedirects, next.Redacted())
		}
		next.Fragment, next.RawFragment = "", ""
		redirects = append(redirects, next.String())
		u = next
	}
}

func (o *Options) setDefaults() {
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	if o.OwnAddr == nil {
		o.OwnAddr = ownaddr.Is
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.MaxRedirects == 0:
		o.MaxRedirects = DefaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
}

// explain turns a failure into what a person reads: a refusal as it is, a deadline as the
// limit it was.
func (o *Options) explain(parent, fctx context.Context, u string, err error) error {
	var be *BlockedError
	var pe *PrivateError
	var re *refusal
	if errors.As(err, &be) || errors.As(err, &pe) || errors.As(err, &re) {
		return err
	}
	switch {
	case parent.Err() != nil && errors.Is(parent.Err(), context.Canceled):
		return fmt.Errorf("web fetch of %s was cancelled: %w", u, context.Canceled)
	case parent.Err() != nil:
		return fmt.Errorf("web fetch of %s ran out of the time its caller gave it: %w", u, parent.Err())
	case fctx.Err() != nil:
		return fmt.Errorf("web fetch of %s did not finish within %v, its time limit; the site is slow or not answering, try again later: %w",
			u, o.Timeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("web fetch of %s failed: %w", u, err)
}

// parseURL parses what a person or an agent asked for, refusing what Fetch never fetches.
func parseURL(raw string) (*url.URL, error) {
	if !hasScheme(raw) {
		return nil, fmt.Errorf("web fetch of %q refused: it has no scheme; %w, such as https://example.com/", raw, ErrScheme)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("web fetch refused: %q is not a URL; write one such as https://example.com/page", raw)
	}
	if err := checkURL(u); err != nil {
		return nil, fmt.Errorf("web fetch of %s refused: %w", u.Redacted(), err)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// hasScheme reports whether raw begins with a URL scheme and its colon.
func hasScheme(raw string) bool {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return false
			}
		case c == ':':
			return i > 0
		default:
			return false
		}
	}
	return false
}

// checkURL refuses a URL Fetch does not fetch: another scheme, a user name or password, no
// host.
func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("its scheme is %q; %w", u.Scheme, ErrScheme)
	}
	if u.User != nil {
		return ErrUserinfo
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("it has no host; write one such as https://example.com/page")
	}
	return nil
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// get makes one hop's request: decide, resolve once, check every address, and send the
// request over a connection to a checked address only.
func (o *Options) get(ctx context.Context, u *url.URL, start string, hop int) (*http.Response, error) {
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, &refusal{refusedAt(start, u.Redacted(), hop) + "its port " + strconv.Quote(p) + " is not a port; a port is 1 to 65535"}
		}
		port = n
	}
	d := o.Decide(u.Hostname(), port)
	switch {
	case d.Why == hosts.NotValid:
		return nil, &refusal{refusedAt(start, u.Redacted(), hop) + d.Reason()}
	case !d.Allowed:
		return nil, &BlockedError{URL: start, HopURL: u.Redacted(), Host: d.Host, Port: d.Port, Hop: hop, Decision: d, how: o.HowToAllow}
	}
	addrs, err := o.checkedAddrs(ctx, d, start, u.Redacted(), hop)
	if err != nil {
		return nil, err
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		// The address net/http asks for is the URL's name; the one dialled is the one checked.
		var lastErr error
		for _, a := range addrs {
			c, err := o.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(d.Port)).String())
			if err == nil {
				return c, nil
			}
			lastErr = err
		}
		return nil, fmt.Errorf("could not connect to %s (%w); the site may be down, try again later", d.Target(), lastErr)
	}
	tr := newTransport(dial, d.Host, o.RootCAs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// The Host header is the name as decided: lower case, punycode, which is what the
	// certificate and the site's virtual hosts are written for.
	req.Host = d.Host
	if strings.IndexByte(d.Host, ':') >= 0 {
		req.Host = "[" + d.Host + "]"
	}
	if p := u.Port(); p != "" {
		req.Host = net.JoinHostPort(d.Host, p)
	}
	req.Header.Set("User-Agent", o.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return resp, nil
}

// newTransport is a transport for one hop: every connection is dial's, to a checked address,
// with TLS verified for serverName (also its SNI); one request per connection, HTTP/1.1, and no
// proxy from the environment, which would send the request where nothing decided it may go.
func newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), serverName string, roots *x509.CertPool) *http.Transport {
	return &http.Transport{
		Proxy:       nil,
		DialContext: dial,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(c, &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12})
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return tc, nil
		},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: maxHeaderBytes,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// checkedAddrs resolves d's host once and checks every address it leads to. A name that leads
// to any special address is refused as a whole, as the proxy refuses it: a rebinding name gets
// no chance to have its other address tried.
func (o *Options) checkedAddrs(ctx context.Context, d hosts.Decision, start, hopURL string, hop int) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(d.Host); err == nil {
		addrs = []netip.Addr{ip}
	} else if d.Literal {
		// localhost is loopback by definition; asking a resolver could only make it
		// something else.
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	} else {
		found, err := o.Resolver.LookupNetIP(ctx, "ip", d.Host)
		if err != nil || len(found) == 0 {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			why := "it has no address"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("could not find %s (%s); check the name", d.Host, why)
		}
		addrs = found
	}
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		refuse := &PrivateError{URL: start, HopURL: hopURL, Host: d.Host, Port: d.Port, Hop: hop, Addr: a, Class: hosts.ClassifyAddr(a), how: o.HowToAllow}
		if refuse.Class == hosts.Public {
			refuse.Class, refuse.Unsure = o.ownClass(a)
		}
		if o.Forbidden != nil && o.Forbidden(netip.AddrPortFrom(a, uint16(d.Port))) {
			refuse.Forbidden = true
			return nil, refuse
		}
		if !d.Literal && refuse.Class.Special() {
			return nil, refuse
		}
	}
	return addrs, nil
}

// ownClass is ThisMachine for a public address that is this machine's own, or that the
// kernel could not place (with why), and Public otherwise. An address carried in a NAT64 or
// 6to4 one is asked about too: a translator on this machine would reach it.
func (o *Options) ownClass(a netip.Addr) (hosts.AddrClass, error) {
	own, err := o.OwnAddr(a)
	if v4, ok := hosts.CarriedIPv4(a); ok && !own && err == nil {
		own, err = o.OwnAddr(v4)
	}
	if own || err != nil {
		return hosts.ThisMachine, err
	}
	return hosts.Public, nil
}

// read turns a final response into a Result, reading at most MaxBytes of its body.
func (o *Options) read(resp *http.Response) (*Result, error) {
	r := &Result{Status: resp.StatusCode, Size: resp.ContentLength}
	mediaType, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		mediaType = ""
	}
	kind := kindOf(mediaType)
	if kind == binary && mediaType != "" && r.Size >= 0 {
		// A declared binary body is never read: its type and size are all it shows.
		r.ContentType, r.Binary = mediaType, true
		r.Text = summary(r)
		return r, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > o.MaxBytes {
		body, r.Truncated = body[:o.MaxBytes], true
	}
	if r.Size < 0 {
		r.Size = int64(len(body))
	}
	if mediaType == "" {
		// The sniffer's charset is a guess of UTF-8; a page's own <meta> knows better.
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
		kind, params = kindOf(mediaType), nil
	}
	r.ContentType = mediaType
	if kind == binary {
		r.Binary = true
		r.Text = summary(r)
		return r, nil
	}
	charset := params["charset"]
	if kind == htmlPage && charset == "" {
		charset = metaCharset(body)
	}
	if r.Truncated && !latin1Labels[charsetLabel(charset)] {
		body = trimCut(body)
	}
	text := decode(body, charset)
	if kind == htmlPage {
		r.Title, r.Text = htmlText(text)
	} else {
		r.Text = text
	}
	return r, nil
}

func summary(r *Result) string {
	size := strconv.FormatInt(r.Size, 10) + " bytes"
	if r.Truncated {
		size = "more than " + size
	}
	return "[binary content: " + r.ContentType + ", " + size + ", not shown]"
}

type contentKind uint8

const (
	binary contentKind = iota
	plainText
	htmlPage
)

// kindOf says how a media type is shown. Structured text (JSON, XML, scripts, YAML) is shown
// as it is; everything else not text/* is binary.
func kindOf(mediaType string) contentKind {
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return htmlPage
	case strings.HasPrefix(mediaType, "text/"),
		strings.HasSuffix(mediaType, "+json"), strings.HasSuffix(mediaType, "+xml"):
		return plainText
	}
	switch mediaType {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-ndjson", "application/ndjson", "application/yaml", "application/x-yaml",
		"application/toml", "application/x-sh", "application/sql", "application/graphql":
		return plainText
	}
	return binary
}
