//go:build linux

package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/tstest"
)

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// connectThrough opens a tunnel to target through the proxy at addr.
func connectThrough(addr, target, auth string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nProxy-Authorization: "+auth+"\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	// The proxy's 200 is one small segment; reading it exactly leaves nothing buffered.
	const ok = "HTTP/1.1 200 Connection established\r\n\r\n"
	buf := make([]byte, len(ok))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != ok {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %q %v", target, buf, err)
	}
	return c, nil
}

// BenchmarkConnectSetup compares opening a loopback connection directly with opening a tunnel
// to the same origin through the proxy, alternating the two. Target: the proxy adds ≤ 150 µs
// median.
//
// The origin and the proxy run in this process, on the same few cores as the client. So each
// timing starts once the origin has finished with every connection so far and the proxy has
// none open: otherwise the origin's work on the direct connection (accepting it, seeing it
// close) runs during the proxied timing that follows it, and the proxy's teardown of a tunnel
// during the next direct one, and each mode is charged for the other.
func BenchmarkConnectSetup(b *testing.B) {
	echo, finished := countingEchoServer(b, "tcp4", "127.0.0.1:0")
	s := startProxy(b, Options{}, echo.Addr().String())
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	auth := basic(User, s.tok)
	var made int64
	// settle polls every 20 µs rather than through tstest.Poll, whose pauses start at 1 ms:
	// longer than a connection takes, they would make the waiting, not the connections, most
	// of each round.
	settle := func() {
		for deadline := time.Now().Add(10 * time.Second); finished.Load() < made || s.open() > 0; time.Sleep(20 * time.Microsecond) {
			if time.Now().After(deadline) {
				b.Fatalf("a connection was still open 10s after its client closed it (origin finished %d of %d, proxy has %d)", finished.Load(), made, s.open())
			}
		}
	}
	var direct, proxied []time.Duration
	for b.Loop() {
		settle()
		start := time.Now()
		c, err := net.Dial("tcp", echo.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
		c.Close()
		made++
		settle()
		start = time.Now()
		c, err = connectThrough(addr, echo.Addr().String(), auth)
		if err != nil {
			b.Fatal(err)
		}
		proxied = append(proxied, time.Since(start))
		c.Close()
		made++
	}
	d, p := median(direct), median(proxied)
	b.ReportMetric(float64(d.Microseconds()), "direct-median-µs")
	b.ReportMetric(float64(p.Microseconds()), "proxy-median-µs")
	b.ReportMetric(float64((p - d).Microseconds()), "extra-median-µs")
}

// BenchmarkTunnel1GiB sends 1 GiB over a direct loopback connection and over a tunnel to the
// same sink. Target: the tunnel reaches ≥ 80 % of the direct throughput.
func BenchmarkTunnel1GiB(b *testing.B) {
	const total = 1 << 30
	sink, got := tstest.Sink(b)
	s := startProxy(b, Options{}, sink.Addr().String())
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	var direct, proxied time.Duration
	b.SetBytes(2 * total)
	for b.Loop() {
		c, err := net.Dial("tcp", sink.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		direct += tstest.SendTimed(b, c, total, got)
		c, err = connectThrough(addr, sink.Addr().String(), basic(User, s.tok))
		if err != nil {
			b.Fatal(err)
		}
		proxied += tstest.SendTimed(b, c, total, got)
	}
	mbps := func(d time.Duration) float64 { return float64(total) * float64(b.N) / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbps(direct), "direct-MiB/s")
	b.ReportMetric(mbps(proxied), "tunnel-MiB/s")
	b.ReportMetric(100*mbps(proxied)/mbps(direct), "tunnel-%-of-direct")
}

// BenchmarkSwap measures replacing a 10,000-entry allow list while 1,000 tunnels are open,
// and checks that the request right after it is decided by the new list. Target: in force
// within 1 ms.
func BenchmarkSwap(b *testing.B) {
	echo := echoServer(b, "tcp4", "127.0.0.1:0")
	s := startProxy(b, Options{MaxConns: 2000}, echo.Addr().String())
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	auth := basic(User, s.tok)
	var open []net.Conn
	for range 1000 {
		c, err := connectThrough(addr, echo.Addr().String(), auth)
		if err != nil {
			b.Fatal(err)
		}
		open = append(open, c)
	}
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	base := make([]hosts.Entry, 0, 10001)
	for i := range 10000 {
		base = append(base, entries(b, "host"+strconv.Itoa(i)+".example.com")...)
	}
	base = append(base, entries(b, echo.Addr().String())...)
	with := hosts.NewList(base)
	other := echoServer(b, "tcp4", "127.0.0.1:0")
	withOther := hosts.NewList(append(slices.Clone(base), entries(b, other.Addr().String())...))
	var swaps, builds []time.Duration
	for b.Loop() {
		start := time.Now()
		s.p.SetList(withOther)
		swaps = append(swaps, time.Since(start))
		c, err := connectThrough(addr, other.Addr().String(), auth)
		if err != nil {
			b.Fatalf("the request after the swap was not decided by the new list: %v", err)
		}
		c.Close()
		start = time.Now()
		s.p.SetAllowList(with.Entries())
		builds = append(builds, time.Since(start))
		if c, err := connectThrough(addr, other.Addr().String(), auth); err == nil {
			c.Close()
			b.Fatal("a host removed by the swap was still admitted")
		}
	}
	b.ReportMetric(float64(median(swaps).Microseconds()), "swap-median-µs")
	b.ReportMetric(float64(median(builds).Microseconds()), "build+swap-10k-median-µs")
}

// tunnelHelperEnv makes the test binary a client process for BenchmarkOpenTunnels: the
// clients and the origin live in another process, so the proxy's own memory is measured.
const tunnelHelperEnv = "PROXY_TUNNEL_HELPER"

// TestTunnelHelperProcess is not a test: it is the client process of BenchmarkOpenTunnels.
func TestTunnelHelperProcess(t *testing.T) {
	spec := os.Getenv(tunnelHelperEnv)
	if spec == "" {
		t.Skip("runs only as BenchmarkOpenTunnels's client process")
	}
	raiseFileLimit(t)
	var proxyAddr, auth string
	var n int
	fmt.Sscan(spec, &proxyAddr, &auth, &n)
	auth = "Basic " + auth
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	fmt.Println(echo.Addr().String())
	in := bufio.NewReader(os.Stdin)
	in.ReadString('\n') // the proxy now allows the origin
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	var failed sync.Once
	for w := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 50 {
				c, err := connectThrough(proxyAddr, echo.Addr().String(), auth)
				if err == nil {
					_, err = c.Write([]byte{1})
				}
				if err == nil {
					_, err = io.ReadFull(c, make([]byte, 1))
				}
				if err != nil {
					failed.Do(func() { fmt.Println("error", err) })
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	fmt.Println("ready")
	in.ReadString('\n') // measured: hang up
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// BenchmarkOpenTunnels5000 holds 5,000 tunnels open at once, from another process, and
// reports the proxy process's resident memory and heap growth. Target: ≤ 150 MiB resident.
// Each idle tunnel costs the proxy two descriptors, its two sockets (it holds a buffer only
// while bytes flow); where the open-file limit cannot be raised that far, fewer tunnels are
// opened and the "tunnels" metric says how many.
func BenchmarkOpenTunnels5000(b *testing.B) {
	n := min(5000, int(raiseFileLimit(b)-200)/2)
	for b.Loop() {
		s := startProxy(b, Options{MaxConns: n + 10})
		rssBefore, heapBefore := memory(b)
		cmd := exec.Command(os.Args[0], "-test.run=^TestTunnelHelperProcess$")
		token := basic(User, s.tok)[len("Basic "):]
		cmd.Env = append(os.Environ(), tunnelHelperEnv+"=127.0.0.1:"+strconv.Itoa(s.port)+" "+token+" "+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		out := bufio.NewReader(stdout)
		origin, _ := out.ReadString('\n')
		s.p.SetAllowList(entries(b, origin[:len(origin)-1]))
		io.WriteString(stdin, "go\n")
		line, _ := out.ReadString('\n')
		if line != "ready\n" {
			b.Fatalf("the client process said %q", line)
		}
		if got := s.p.Active(); got < n {
			b.Fatalf("%d tunnels open, want %d", got, n)
		}
		rss, heap := memory(b)
		// As floats: memory can shrink across the run, and unsigned differences would wrap.
		rssGrowth, heapGrowth := float64(rss)-float64(rssBefore), float64(heap)-float64(heapBefore)
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		b.ReportMetric(rssGrowth/(1<<20), "rss-growth-MiB")
		b.ReportMetric(heapGrowth/(1<<20), "heap-growth-MiB")
		b.ReportMetric(heapGrowth/float64(n), "heap-B/tunnel")
		b.ReportMetric(rssGrowth/float64(n), "rss-B/tunnel")
		b.ReportMetric(float64(n), "tunnels")
		io.WriteString(stdin, "done\n")
		stdin.Close()
		cmd.Wait()
		s.p.Close()
	}
}
