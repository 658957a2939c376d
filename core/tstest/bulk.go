package tstest

import (
	"io"
	"net"
	"testing"
	"time"
)

// Serve is a server on 127.0.0.1 that hands each connection to handle on a goroutine of its
// own and closes it once handle returns; it is closed when tb ends.
func Serve(tb testing.TB, handle func(net.Conn)) net.Listener {
	tb.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ServeOn(tb, l, handle)
}

// ServeOn is Serve on a listener of the caller's (at other addresses, or made in another
// network namespace): it takes l over and closes it when tb ends.
func ServeOn(tb testing.TB, l net.Listener, handle func(net.Conn)) net.Listener {
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l
}

// Sink is a Serve that reads each connection to its end and then reports how many bytes it
// read.
func Sink(tb testing.TB) (net.Listener, <-chan int64) {
	tb.Helper()
	got := make(chan int64, 16)
	l := Serve(tb, func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	})
	return l, got
}

// SendTimed writes total bytes to c in 1 MiB writes, ends c's writing side, waits until the
// Sink reports that many, closes c, and returns how long that took.
func SendTimed(tb testing.TB, c net.Conn, total int, got <-chan int64) time.Duration {
	tb.Helper()
	buf := make([]byte, 1<<20)
	start := time.Now()
	for sent := 0; sent < total; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			tb.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if n := <-got; n != int64(total) {
		tb.Fatalf("the sink got %d bytes, want %d", n, total)
	}
	el := time.Since(start)
	c.Close()
	return el
}
