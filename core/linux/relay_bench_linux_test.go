package linux

import (
	"context"
	"flag"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/tstest"
)

// relayRig is a network namespace set up as a sandbox's (routes, rules, relay listener),
// whose relay is served by a proxy that sends the name bench.test to a server on this
// process's own loopback. inside runs a function on a thread in that namespace, where the
// sockets it makes are the namespace's: a program inside, without the rest of the wall.
type relayRig struct {
	inside func(func())
}

func newRelayRig(b *testing.B, origin string) *relayRig {
	if relaySupport() != "" || os.Geteuid() != 0 {
		b.Skipf("no relay here (%s) or not root", relaySupport())
	}
	m := <-newNetNS(false)
	if m.err != nil {
		b.Fatal(m.err)
	}
	b.Cleanup(func() { m.f.Close() })
	work := make(chan func())
	made := make(chan error, 1)
	var relayFD int
	go func() {
		// This thread stays in the namespace until the benchmark ends, then is let go
		// with it (a locked goroutine that returns takes its thread down).
		runtime.LockOSThread()
		if err := unix.Setns(int(m.f.Fd()), unix.CLONE_NEWNET); err != nil {
			made <- err
			return
		}
		err := loopbackUp()
		var stub int
		if err == nil {
			relayFD, stub, err = egressUp()
		}
		if err == nil {
			unix.Close(stub)
		}
		made <- err
		for f := range work {
			f()
		}
	}()
	if err := <-made; err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { close(work) })
	f := os.NewFile(uintptr(relayFD), "relay")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	entry, _ := hosts.Parse("bench.test:80")
	site := netip.MustParseAddr("203.0.113.10")
	p, err := proxy.New(proxy.Options{Token: proxy.NewToken(), Allow: []hosts.Entry{entry},
		Resolver: resolverFunc(func(string) []netip.Addr { return []netip.Addr{site} }),
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, origin)
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	synthetic := netip.MustParseAddr("198.18.0.1")
	go p.ServeRelay(l, proxy.Relay{Names: func(a netip.Addr) (string, func(), bool) { return "bench.test", func() {}, a == synthetic }})
	return &relayRig{inside: func(fn func()) {
		done := make(chan struct{})
		work <- func() { fn(); close(done) }
		<-done
	}}
}

type resolverFunc func(string) []netip.Addr

func (r resolverFunc) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r(host), nil
}

// BenchmarkRelayConnectSetup measures a connection that the origin answers (connect, then
// one byte read), directly on loopback and from inside a sandbox's network through the
// relay, by name. Target: the relay adds at most 200 µs, median.
func BenchmarkRelayConnectSetup(b *testing.B) {
	// The origin answers on its accepting goroutine: a goroutine per connection would add
	// its start to both figures.
	origin, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer origin.Close()
	go func() {
		for {
			c, err := origin.Accept()
			if err != nil {
				return
			}
			c.Write([]byte{1})
			c.Close()
		}
	}()
	rig := newRelayRig(b, origin.Addr().String())
	// The sockets are made first, outside the timing: a sandbox's inside the rig's
	// namespace, on its thread. The connection itself is made and timed on an ordinary
	// goroutine, as a program's would be, for both.
	socket := func() int {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		return fd
	}
	once := func(fd int, to netip.AddrPort) time.Duration {
		start := time.Now()
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())}); err != nil {
			b.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "client")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		var one [1]byte
		if _, err := io.ReadFull(c, one[:]); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		c.Close()
		return el
	}
	originAddr := netip.MustParseAddrPort(origin.Addr().String())
	synthetic := netip.MustParseAddrPort("198.18.0.1:80")
	var direct, relayed []time.Duration
	for b.Loop() {
		direct = append(direct, once(socket(), originAddr))
		var fd int
		rig.inside(func() { fd = socket() })
		relayed = append(relayed, once(fd, synthetic))
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	b.ReportMetric(median(direct), "direct-median-µs")
	b.ReportMetric(median(relayed), "relay-median-µs")
	b.ReportMetric(median(relayed)-median(direct), "relay-extra-µs")
}

// BenchmarkRelay1GiB sends 1 GiB over a direct loopback connection and from inside a
// sandbox's network through the relay to the same sink. Target: the relay reaches ≥ 80 % of
// the direct throughput.
func BenchmarkRelay1GiB(b *testing.B) {
	const total = 1 << 30
	if bt := flag.Lookup("test.benchtime"); bt != nil && strings.HasSuffix(bt.Value.String(), "x") {
		if n, _ := strconv.Atoi(strings.TrimSuffix(bt.Value.String(), "x")); n > 5 {
			b.Skip("each round moves 2 GiB: run it with -benchtime 3x")
		}
	}
	sink, got := tstest.Sink(b)
	rig := newRelayRig(b, sink.Addr().String())
	var direct, relayed time.Duration
	b.SetBytes(2 * total)
	for b.Loop() {
		c, err := net.Dial("tcp4", sink.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		direct += tstest.SendTimed(b, c, total, got)
		var fd int
		rig.inside(func() { fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0) })
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{198, 18, 0, 1}, Port: 80}); err != nil {
			b.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "client")
		rc, err := net.FileConn(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		relayed += tstest.SendTimed(b, rc, total, got)
	}
	mbps := func(d time.Duration) float64 { return float64(total) * float64(b.N) / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbps(direct), "direct-MiB/s")
	b.ReportMetric(mbps(relayed), "relay-MiB/s")
	b.ReportMetric(100*mbps(relayed)/mbps(direct), "relay-%-of-direct")
}
