package proxy

import (
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// heldBytes is what the kernel holds, received and queued to send (ss's skmem r and w), in
// the proxy's own sockets: those at its port, and those to the origin at originPort.
func heldBytes(t *testing.T, proxyPort, originPort int) int {
	out, err := exec.Command("ss", "-tmn").Output()
	if err != nil {
		t.Skipf("ss: %v", err)
	}
	total, mine := 0, false
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "skmem:("); ok {
			if mine {
				for _, f := range strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), ")"), ",") {
					if len(f) > 1 && (f[0] == 'r' || f[0] == 'w') && f[1] >= '0' && f[1] <= '9' {
						n, _ := strconv.Atoi(f[1:])
						total += n
					}
				}
			}
			continue
		}
		f := strings.Fields(l)
		mine = len(f) >= 5 && (strings.HasSuffix(f[3], ":"+strconv.Itoa(proxyPort)) || strings.HasSuffix(f[4], ":"+strconv.Itoa(originPort)))
	}
	return total
}

// A session that opens tunnels to a fast source and never reads them makes the proxy hold
// only its sockets' sized buffers: the origin is read no faster than the sandbox drains it,
// at most MaxFullBuffers tunnels get a large buffer, and every one gives it back.
func TestTunnelsNeverReadHoldBoundedMemory(t *testing.T) {
	const tunnels = 50
	source := tcpServer(t, "tcp4", "127.0.0.1:0", func(c net.Conn) {
		chunk := make([]byte, 1<<20)
		for sent := 0; sent < 64<<20; sent += len(chunk) {
			c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write(chunk); err != nil {
				break
			}
		}
		io.Copy(io.Discard, c)
	})
	shared := NewConnLimit(1000)
	s := startProxy(t, Options{Shared: shared}, source.Addr().String())
	var clients []net.Conn
	for i := 0; i < tunnels; i++ {
		c, resp := rawConnect(t, "127.0.0.1:"+strconv.Itoa(s.port), source.Addr().String(), basic(User, s.tok))
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		c.(*net.TCPConn).SetReadBuffer(4096)
		clients = append(clients, c)
	}
	if n := s.p.full.Load(); n != MaxFullBuffers || shared.full.Load() != MaxFullBuffers {
		t.Fatalf("%d tunnels have a full origin buffer (%d of the daemon's); want %d", n, shared.full.Load(), MaxFullBuffers)
	}
	time.Sleep(3 * time.Second) // the source fills all it is let
	held := heldBytes(t, s.port, source.Addr().(*net.TCPAddr).Port)
	// Per tunnel the kernel holds at most twice each buffer set: the origin's receive
	// buffer and the sandbox side's send buffer.
	bound := MaxFullBuffers*2*(FullOriginBuffer+SandboxSideBuffer) + (tunnels-MaxFullBuffers)*2*(OriginBuffer+SandboxSideBuffer)
	t.Logf("%d tunnels never read: the proxy's sockets hold %d MiB (bound %d MiB)", tunnels, held>>20, bound>>20)
	if held > bound*5/4 {
		t.Fatalf("the proxy's sockets hold %d MiB for %d tunnels never read; the bound is %d MiB", held>>20, tunnels, bound>>20)
	}
	for _, c := range clients {
		c.Close()
	}
	tstest.WaitFor(t, 10*time.Second, func() error {
		if n := shared.full.Load(); n != 0 || s.p.full.Load() != 0 {
			return strconv.ErrRange
		}
		return nil
	})
}
