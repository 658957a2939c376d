package proxy

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// summingServer reads each connection to its end, then answers with how many bytes came and
// their SHA-256, and closes: a protocol that ends its request with a shutdown.
func summingServer(t testing.TB) net.Listener {
	t.Helper()
	return tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		h := sha256.New()
		n, _ := io.Copy(h, c)
		fmt.Fprintf(c, "%d %x", n, h.Sum(nil))
	})
}

// TestTunnelHalfClose: a client that shuts down its side after its request still gets the
// whole answer, and then the end of the stream.
func TestTunnelHalfClose(t *testing.T) {
	origin := summingServer(t)
	s := startProxy(t, Options{}, origin.Addr().String())
	c, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(s.port), origin.Addr().String(), basic(User, s.tok))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	msg := make([]byte, 3<<20)
	rand.Read(msg)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if want := fmt.Sprintf("%d %x", len(msg), sha256.Sum256(msg)); err != nil || string(got) != want {
		t.Fatalf("after a half-close the client read %q (%v); want %q and the end", got, err, want)
	}
}

// TestTunnelCarriesBulk sends megabytes both ways at once through a tunnel and checks every
// byte.
func TestTunnelCarriesBulk(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	s := startProxy(t, Options{}, echo.Addr().String())
	c, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(s.port), echo.Addr().String(), basic(User, s.tok))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	msg := make([]byte, 24<<20)
	rand.Read(msg)
	go func() {
		// Odd-sized writes, so that bursts end mid-buffer.
		for rest := msg; len(rest) > 0; {
			n := min(len(rest), 1<<20+4321)
			if _, err := c.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the bytes that came back through the tunnel differ from those sent")
	}
	testTunnelIdleAgain(t, s.p)
}
