package webfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openworker/openworker/core/hosts"
)

// fakeNet is the resolver and dialler the tests hand Fetch. Names resolve only to what a test
// says. A name that should be allowed resolves to a documentation address (203.0.113.0/24),
// since a name leading to loopback is refused by design; dialling that address is routed to a
// loopback origin. Nothing is ever dialled but loopback: a dial to an address with no route
// that is not loopback fails the test.
type fakeNet struct {
	t      testing.TB
	mu     sync.Mutex
	names  map[string][]netip.Addr
	routes map[netip.AddrPort]string
	looked []string
	dialed []string
}

func newFakeNet(t testing.TB) *fakeNet {
	return &fakeNet{t: t, names: map[string][]netip.Addr{}, routes: map[netip.AddrPort]string{}}
}

func (n *fakeNet) resolveTo(name string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addrs {
		n.names[name] = append(n.names[name], netip.MustParseAddr(a))
	}
}

// route makes a dial to addr:port reach the server listening at to.
func (n *fakeNet) route(addr string, port int, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(port))] = to
}

func (n *fakeNet) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.looked = append(n.looked, host)
	if network != "ip" {
		n.t.Errorf("resolved %s for network %q, want \"ip\"", host, network)
	}
	a, ok := n.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), a...), nil
}

func (n *fakeNet) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, address)
	ap, err := netip.ParseAddrPort(address)
	to, routed := n.routes[ap]
	n.mu.Unlock()
	if err != nil {
		n.t.Errorf("Fetch dialled %q, which is not a checked address and port", address)
		return nil, err
	}
	if !routed {
		if !ap.Addr().IsLoopback() {
			n.t.Errorf("Fetch dialled %s, which has no route in this test", address)
			return nil, errors.New("no route in this test")
		}
		to = address
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

func (n *fakeNet) dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dialed...)
}

func (n *fakeNet) lookups() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.looked...)
}

// allowing decides with a real allow list of entries.
func allowing(t testing.TB, entries ...string) func(string, int) hosts.Decision {
	t.Helper()
	var es []hosts.Entry
	for _, s := range entries {
		e, err := hosts.Parse(s)
		if err != nil {
			t.Fatalf("hosts.Parse(%q): %v", s, err)
		}
		es = append(es, e)
	}
	l := hosts.NewList(es)
	return func(host string, port int) hosts.Decision { return hosts.Decide(l, nil, host, port) }
}

func port(t testing.TB, s *httptest.Server) int {
	t.Helper()
	ap, err := netip.ParseAddrPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return int(ap.Port())
}

// origin is a loopback test site.
func origin(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello\n  world <b>not markup</b>\n")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name": "café", "list": [1, 2]}`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
		w.Write([]byte("caf\xe9 \x80"))
	})
	mux.HandleFunc("/meta-latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><meta charset=\"windows-1252\"><title>Men\xfc</title></head><body>gr\xfc\xdfe</body></html>"))
	})
	mux.HandleFunc("/accents", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ééééé")
	})
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", "2048")
		w.Write(append([]byte("\x89PNG\r\n\x1a\nSECRET"), make([]byte, 2048-14)...))
	})
	mux.HandleFunc("/sniffed", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no type: Fetch sniffs
		w.Write([]byte("\x00\x01\x02binary\x00"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "100000")
		w.Write([]byte(strings.Repeat("0123456789", 10000)))
	})
	mux.HandleFunc("/bigbin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.(http.Flusher).Flush() // no Content-Length: Fetch counts, up to its limit
		w.Write(make([]byte, 100000))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "no such page")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "a little, then nothing")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until the client gives up
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if code == 0 {
			code = http.StatusFound
		}
		http.Redirect(w, r, r.URL.Query().Get("to"), code)
	})
	mux.HandleFunc("/chain/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "end of the chain")
			return
		}
		http.Redirect(w, r, "/chain/"+strconv.Itoa(n-1), http.StatusMovedPermanently)
	})
	mux.HandleFunc("/whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		sni := ""
		if r.TLS != nil {
			sni = r.TLS.ServerName
		}
		fmt.Fprintf(w, "sni=%s host=%s ua=%s", sni, r.Host, r.UserAgent())
	})
	s := httptest.NewUnstartedServer(mux)
	// The refused handshakes of the certificate tests are expected, not news.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	return s
}

const testPage = `<!DOCTYPE html>
<html><head>
<title>  A   test
 page </title>
<style>body { color: red }</style>
<script>var secret = "do not show";</script>
<link rel="stylesheet" href="http://elsewhere.example/x.css">
</head>
<body>
<noscript>turn on scripts</noscript>
<template><p>not rendered</p></template>
<h1>Main   heading</h1>
<p>First    paragraph
with a <a href="/x">link</a> and <b>bold</b> &amp; an entity.</p>
<p>Line one<br>line two</p>
<ul><li>one</li><li>two <i>items</i></li></ul>
<img src="http://elsewhere.example/i.png" alt="a picture">
<pre>keep
  this</pre>
<div>last</div>
</body></html>`

const testPageText = `Main heading

First paragraph with a link and bold & an entity.

Line one
line two

- one
- two items

keep
  this

last`
