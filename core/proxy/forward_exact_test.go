package proxy

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestForwardOfLocalhostIsNotAllOfLoopback: a connection that arrives inside at 127.0.0.2
// is relayed only under an entry naming 127.0.0.2, never under localhost's, which is
// 127.0.0.1 and ::1 (as the proxy reads it for a CONNECT).
func TestForwardOfLocalhostIsNotAllOfLoopback(t *testing.T) {
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	for _, tt := range []struct {
		entry   string
		relayed bool
	}{{"localhost:%d", false}, {"127.0.0.1:%d", false}, {"127.0.0.2:%d", true}} {
		t.Run(tt.entry[:len(tt.entry)-3], func(t *testing.T) {
			l, err := net.Listen("tcp4", "127.0.0.2:0")
			if err != nil {
				t.Skipf("no 127.0.0.2 here: %v", err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			p, err := New(Options{Token: NewToken(), Allow: entries(t, fmt.Sprintf(tt.entry, port)), Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
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
			if ok, _ := echoes(t, l.Addr().String()); ok != tt.relayed {
				t.Fatalf("relayed %v, want %v", ok, tt.relayed)
			}
			refused := p.Blocked(time.Now().Add(-time.Minute), time.Now())
			if !tt.relayed && (len(refused) != 1 || refused[0].Host != "127.0.0.2") {
				t.Errorf("refusals recorded: %+v", refused)
			}
		})
	}
}
