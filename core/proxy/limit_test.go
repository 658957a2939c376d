package proxy

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// TestSharedConnLimit: sessions whose proxies share a ConnLimit hold no more tunnels
// together than it allows, each still within its own cap, and a closed tunnel frees its
// place for any of them.
func TestSharedConnLimit(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	shared := NewConnLimit(3)
	a := startProxy(t, Options{MaxConns: 2, Shared: shared}, echo.Addr().String())
	b := startProxy(t, Options{MaxConns: 2, Shared: shared}, echo.Addr().String())
	connect := func(s *session) (net.Conn, int, string) {
		t.Helper()
		c, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(s.port), echo.Addr().String(), basic(User, s.tok))
		if resp.StatusCode == 200 {
			return c, 200, ""
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		return nil, resp.StatusCode, string(body)
	}
	var open []net.Conn
	for _, s := range []*session{a, a, b} {
		c, code, body := connect(s)
		if code != 200 {
			t.Fatalf("a tunnel within both caps = %d %q", code, body)
		}
		open = append(open, c)
	}
	// b is within its own cap (1 of 2) but the sessions together are at 3.
	_, code, body := connect(b)
	if code != 503 || !strings.Contains(body, "sessions together already have 3 connections open") {
		t.Fatalf("a tunnel past the shared cap = %d %q, want 503 naming it", code, body)
	}
	// a is at its own cap first.
	if _, code, body := connect(a); code != 503 || !strings.Contains(body, "this session already has 2 connections open") {
		t.Fatalf("a tunnel past the session's cap = %d %q, want 503 naming it", code, body)
	}
	open[0].Close()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if n := shared.Open(); n > 2 {
			return fmt.Errorf("a closed tunnel never gave its place back: %d open", n)
		}
		return nil
	})
	c, code, body := connect(b)
	if code != 200 {
		t.Fatalf("a tunnel after one closed = %d %q", code, body)
	}
	open = append(open, c)
	for _, c := range open[1:] {
		c.Close()
	}
}

func TestDefaultConnCap(t *testing.T) {
	p, err := New(Options{Token: NewToken()})
	if err != nil {
		t.Fatal(err)
	}
	// One session at its cap holds two descriptors a tunnel: the default keeps that far
	// below a daemon's usual 1024-descriptor floor.
	if p.opts.MaxConns != DefaultMaxConns || DefaultMaxConns*2 > 1024 {
		t.Fatalf("default cap %d", p.opts.MaxConns)
	}
}

func TestConnLimitBounds(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, 1}, {-5, 1}, {7, 7}, {1 << 40, 1 << 30}} {
		if got := NewConnLimit(tc.set).Max(); got != tc.want {
			t.Errorf("NewConnLimit(%d).Max() = %d, want %d", tc.set, got, tc.want)
		}
	}
}
