package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// hugeHeadOrigin answers any request with a response head that never ends: one header of up
// to limit bytes. It stops when the proxy stops reading.
func hugeHeadOrigin(t testing.TB, limit int) net.Listener {
	return tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: ")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent := 0; sent < limit; sent += len(chunk) {
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
}

// getThroughProxy sends GET http://target/ to the proxy at port with the token, and returns
// the answer's status and body.
func getThroughProxy(t testing.TB, port int, tok, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://"+target+"/ HTTP/1.1\r\nHost: "+target+"\r\nProxy-Authorization: "+basic(User, tok)+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// An allowed origin's response head is bounded as a request's is: past the bound the client
// gets 502 saying why, and the proxy reads no more of it.
func TestResponseHeadIsBounded(t *testing.T) {
	origin := hugeHeadOrigin(t, 64<<20)
	s := startProxy(t, Options{}, origin.Addr().String())
	code, body := getThroughProxy(t, s.port, s.tok, origin.Addr().String())
	if code != http.StatusBadGateway || !strings.Contains(body, "response head from "+origin.Addr().String()+" is larger than 64 KiB") {
		t.Fatalf("a response head without end = %d %q, want 502 saying the head is too large", code, body)
	}
}

// Forwarded host ports count against the caps all the sessions share, as tunnels do: with
// the shared cap at 2, no more than 2 forwarded connections are open at once.
func TestForwardsCountAgainstTheSharedCap(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	shared := NewConnLimit(2)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	p, err := New(Options{Token: NewToken(), MaxConns: 100, Shared: shared, Allow: entries(t, "127.0.0.1:"+strconv.Itoa(port)),
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, echo.Addr().String())
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := p.Forward(l, port); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i := 0; i < 6; i++ {
		if e, _ := echoes(t, l.Addr().String()); e {
			ok++
		}
	}
	if ok != 2 || shared.Open() != 2 {
		t.Fatalf("%d forwarded connections echoed, %d hold a shared place; want 2 (the shared cap)", ok, shared.Open())
	}
}

// A tunnel whose client has gone closes soon after, giving back its places, even when the
// origin neither sends nor closes: the client's end is passed on as a half-close, and the
// tunnel lingers only Linger for the other side.
func TestTunnelClosesWhenItsClientHasGone(t *testing.T) {
	done := make(chan struct{})
	silent := tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		io.Copy(io.Discard, c) // reads to the client's end, then holds the connection open
		<-done
	})
	t.Cleanup(func() { close(done) }) // before the server's own cleanup waits for it
	shared := NewConnLimit(10)
	s := startProxy(t, Options{Shared: shared, Linger: 200 * time.Millisecond}, silent.Addr().String())
	c, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(s.port), silent.Addr().String(), basic(User, s.tok))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if s.p.Active() != 1 || shared.Open() != 1 {
		t.Fatalf("an open tunnel holds %d/%d places", s.p.Active(), shared.Open())
	}
	c.Close()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if s.open() != 0 || s.p.Active() != 0 || shared.Open() != 0 {
			return fmt.Errorf("the tunnel of a client that has gone still holds %d/%d places", s.p.Active(), shared.Open())
		}
		return nil
	})
}

func TestDefaultIdleTimeoutIsReasonable(t *testing.T) {
	p, err := New(Options{Token: NewToken()})
	if err != nil {
		t.Fatal(err)
	}
	if p.opts.IdleTimeout > 15*time.Minute || p.opts.Linger > time.Minute || p.opts.Linger <= 0 {
		t.Fatalf("idle timeout %v, linger %v", p.opts.IdleTimeout, p.opts.Linger)
	}
}
