package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
)

// FuzzRequestHead feeds arbitrary bytes to the request reader and the target parser: no
// panic, no head over the limit accepted, every accepted target a real host and port, and
// nothing accepted that Go's own reader would read differently.
func FuzzRequestHead(f *testing.F) {
	f.Add([]byte("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n"))
	f.Add([]byte("GET http://example.org/x HTTP/1.1\r\nHost: example.org\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("CONNECT [::1]:8080 HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := bytes.NewReader(data)
		br := bufio.NewReaderSize(src, MaxHeadBytes)
		req, status, msg := readRequest(br)
		if req == nil {
			if status != 0 && msg == "" {
				t.Fatalf("status %d without a message", status)
			}
			return
		}
		if req.size > MaxHeadBytes {
			t.Fatalf("accepted a head of %d bytes", req.size)
		}
		if consumed := len(data) - src.Len() - br.Buffered(); consumed != req.size {
			t.Fatalf("read %d bytes for a head of %d: the reader and the parser disagree on where the head ends in %q", consumed, req.size, data)
		}
		host, port, status, msg := requestTarget(req)
		if status != 0 {
			if msg == "" {
				t.Fatalf("target refused with %d and no message", status)
			}
			return
		}
		if host == "" || port < 1 || port > 65535 || strings.ContainsAny(host, "/@ ") && req.method == http.MethodConnect {
			t.Fatalf("accepted target %q:%d from %q", host, port, data)
		}
		if hosts.Decide(nil, nil, host, port).Why == hosts.NotValid {
			return // refused as not a host, whatever Go would make of it
		}
		// Go reads every request the proxy goes on to decide, and reads it alike.
		goReq, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("accepted a request Go rejects (%v): %q", err, data)
		}
		if goReq.Method != req.method || goReq.Header.Get("Proxy-Authorization") != req.auth {
			t.Fatalf("read %s with credentials %q; Go reads %s with %q, from %q", req.method, req.auth, goReq.Method, goReq.Header.Get("Proxy-Authorization"), data)
		}
		if req.method == http.MethodConnect {
			goHost, goPortText, err := net.SplitHostPort(goReq.URL.Host)
			goPort, _ := strconv.Atoi(goPortText)
			if err != nil || goHost != host || goPort != port {
				t.Fatalf("CONNECT to %q port %d; Go reads the target as %q (%v), from %q", host, port, goReq.URL.Host, err, data)
			}
		}
	})
}

// FuzzProxyConn drives a whole client connection with arbitrary bytes against a proxy whose
// only allowed host resolves to one test address, and checks that the proxy never dials
// anything else, and dials at all only for a request carrying the token.
func FuzzProxyConn(f *testing.F) {
	const token = "abcdefghijklmnopqrstuv" // "openworker:" + token is 33 bytes: one base64 spelling
	auth := base64.StdEncoding.EncodeToString([]byte(User + ":" + token))
	f.Add([]byte("CONNECT allowed.example:443 HTTP/1.1\r\nProxy-Authorization: Basic " + auth + "\r\n\r\nhello"))
	f.Add([]byte("GET http://allowed.example/ HTTP/1.1\r\nProxy-Authorization: Basic " + auth + "\r\n\r\nGET http://rebind.example/ HTTP/1.1\r\nProxy-Authorization: Basic " + auth + "\r\n\r\n"))
	f.Add([]byte("CONNECT rebind.example:443 HTTP/1.1\r\nProxy-Authorization: Basic " + auth + "\r\n\r\n"))
	f.Add([]byte("CONNECT allowed.example:443 HTTP/1.1\r\n\r\n"))
	fn := newFakeNet()
	fn.resolveTo("allowed.example", "203.0.113.5")
	fn.resolveTo("rebind.example", "127.0.0.1")
	fn.resolveTo("a.wild.example", "10.0.0.1")
	dialed := make(chan string, 1000)
	p, err := New(Options{
		Token:       token,
		Allow:       entries(f, "allowed.example:443", "allowed.example:80", "rebind.example", "*.wild.example"),
		Resolver:    fn,
		HeadTimeout: 20 * time.Millisecond,
		IdleTimeout: 20 * time.Millisecond,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed <- addr
			a, b := net.Pipe()
			b.Close()
			return a, nil
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		p.accept(server, nil, false)
		client.SetDeadline(time.Now().Add(5 * time.Second))
		go func() { client.Write(data) }()
		io.Copy(io.Discard, client)
		client.Close()
		for {
			select {
			case addr := <-dialed:
				if addr != "203.0.113.5:443" && addr != "203.0.113.5:80" {
					t.Fatalf("the proxy dialled %s for %q", addr, data)
				}
				if !bytes.Contains(data, []byte(auth)) {
					t.Fatalf("the proxy dialled %s for a request without the token: %q", addr, data)
				}
			default:
				return
			}
		}
	})
}
