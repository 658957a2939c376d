package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzRequestHead feeds arbitrary bytes to the head reader and the target parser: no panic,
// no head over the limit accepted, and every accepted target a real host and port.
func FuzzRequestHead(f *testing.F) {
	f.Add([]byte("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n"))
	f.Add([]byte("GET http://example.org/x HTTP/1.1\r\nHost: example.org\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("CONNECT [::1]:8080 HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := limitReader{r: bytes.NewReader(data), budget: -1}
		br := bufio.NewReaderSize(&lim, 4096)
		req, status, msg := readHead(br, &lim)
		if req == nil {
			if status != 0 && msg == "" {
				t.Fatalf("status %d without a message", status)
			}
			return
		}
		consumed := len(data) - br.Buffered() - int(int64(len(data))-lim.n)
		if consumed > MaxHeadBytes {
			t.Fatalf("accepted a head of %d bytes", consumed)
		}
		host, port, status, msg := requestTarget(req)
		if status != 0 {
			if msg == "" {
				t.Fatalf("target refused with %d and no message", status)
			}
			return
		}
		if host == "" || port < 1 || port > 65535 || strings.ContainsAny(host, "/@ ") && req.Method == http.MethodConnect {
			t.Fatalf("accepted target %q:%d from %q", host, port, data)
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
		p.accept(server)
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
