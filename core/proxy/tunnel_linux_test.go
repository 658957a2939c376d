//go:build linux

package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// testTunnelIdleAgain checks that a proxy's tunnels, once nothing flows, hold no large
// buffer.
func testTunnelIdleAgain(t *testing.T, p *Proxy) {
	t.Helper()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if n := p.bufs.large.Load(); n != 0 {
			return fmt.Errorf("%d large buffers still held by idle tunnels", n)
		}
		return nil
	})
}

// TestLargeBuffersAreCapped: a burst moves to a large buffer only while the proxy holds fewer
// than maxLarge, and gives it back.
func TestLargeBuffersAreCapped(t *testing.T) {
	t.Parallel()
	bufs := &buffers{}
	var bursts []*burster
	for range maxLarge + 2 {
		b := &burster{t: &tunnel{bufs: bufs}}
		b.takeBuffer()
		b.growBuffer()
		bursts = append(bursts, b)
	}
	large := 0
	for _, b := range bursts {
		if b.large != (len(b.buf) == largeBuffer) {
			t.Fatalf("a burst with a %d-byte buffer says large=%v", len(b.buf), b.large)
		}
		if b.large {
			large++
		}
	}
	if large != maxLarge || bufs.large.Load() != maxLarge {
		t.Fatalf("%d bursts got large buffers (count %d); want %d", large, bufs.large.Load(), maxLarge)
	}
	for _, b := range bursts {
		b.dropBuffer()
	}
	if n := bufs.large.Load(); n != 0 {
		t.Fatalf("%d large buffers counted after every burst gave its buffer back", n)
	}
}
