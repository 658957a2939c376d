//go:build linux

package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/openworker/openworker/core/localca"
)

// standInBench is a proxy with the gh login's stand-in bound to api.github.com, and one
// loopback origin that answers both api.github.com (reached through a terminated
// connection) and tunnel.example (the same origin through a plain tunnel).
type standInBench struct {
	s     *session
	addr  string
	auth  string
	roots *x509.CertPool // what the client trusts: the machine's CA and the origin's
	proxy string         // the proxy's URL, with its credentials
	pem   string         // a file of the two CAs
}

func newStandInBench(b *testing.B) *standInBench {
	b.Helper()
	machine, err := localca.Load(filepath.Join(b.TempDir(), "machine"))
	if err != nil {
		b.Fatal(err)
	}
	public, err := localca.Load(filepath.Join(b.TempDir(), "public"))
	if err != nil {
		b.Fatal(err)
	}
	big := make([]byte, 1<<20)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("bytes"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		for n > 0 {
			k, err := w.Write(big[:min(n, len(big))])
			if err != nil {
				return
			}
			n -= k
		}
	}))
	srv.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return public.Leaf(h.ServerName) }}
	srv.StartTLS()
	b.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(public.Certificate())
	s := startProxy(b, Options{StandIns: &StandIns{
		Logins:      []StandIn{{Login: "gh", Host: "api.github.com", Port: 443, StandIn: ghStandIn, Real: ghReal}},
		Certificate: machine.Leaf,
		Roots:       roots,
	}}, "api.github.com:443", "tunnel.example:443")
	s.net.route("api.github.com", 443, srv.Listener.Addr().String())
	s.net.route("tunnel.example", 443, srv.Listener.Addr().String())
	client := x509.NewCertPool()
	var bundle []byte
	for _, ca := range []*localca.CA{public, machine} {
		client.AddCert(ca.Certificate())
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw})...)
	}
	file := filepath.Join(b.TempDir(), "roots.pem")
	if err := os.WriteFile(file, bundle, 0o600); err != nil {
		b.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	return &standInBench{s: s, addr: addr, auth: basic(User, s.tok), roots: client,
		proxy: "http://" + User + ":" + s.tok + "@" + addr, pem: file}
}

// get opens a new connection to host through the proxy, sends one GET for n bytes with the
// stand-in, and reads the whole answer; it returns the time to the response's head.
func (sb *standInBench) get(b *testing.B, host string, n int) time.Duration {
	start := time.Now()
	c, err := connectThrough(sb.addr, host+":443", sb.auth)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: sb.roots, NextProtos: []string{"http/1.1"}})
	io.WriteString(tc, "GET /?bytes="+strconv.Itoa(n)+" HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: token "+ghStandIn+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReaderSize(tc, 64<<10), nil)
	if err != nil {
		b.Fatal(err)
	}
	head := time.Since(start)
	got, err := io.Copy(io.Discard, resp.Body)
	if err != nil || got != int64(n) || resp.StatusCode != 200 {
		b.Fatalf("%s: %d, %d bytes of %d: %v", host, resp.StatusCode, got, n, err)
	}
	return head
}

// BenchmarkStandInSetup compares a new connection's first small request through a plain
// tunnel with the same through a terminated connection (the proxy's TLS with the client, its
// own with the origin, the stand-in replaced), alternating the two, to the same loopback
// origin. Target: the terminated connection adds ≤ 2 ms median.
func BenchmarkStandInSetup(b *testing.B) {
	sb := newStandInBench(b)
	sb.get(b, "api.github.com", 10) // the host's certificate is made at the first ask
	var tunnel, terminated []time.Duration
	for b.Loop() {
		tunnel = append(tunnel, sb.get(b, "tunnel.example", 10))
		terminated = append(terminated, sb.get(b, "api.github.com", 10))
	}
	t, s := median(tunnel), median(terminated)
	b.ReportMetric(float64(t.Microseconds()), "tunnel-median-µs")
	b.ReportMetric(float64(s.Microseconds()), "terminated-median-µs")
	b.ReportMetric(float64((s - t).Microseconds()), "extra-median-µs")
}

// BenchmarkStandIn1GiB downloads 1 GiB through a plain tunnel and through a terminated
// connection from the same loopback origin, alternating the two. Target: the terminated
// connection reaches ≥ 70 % of the tunnel's throughput. Two programs download: curl, in a
// process of its own as a program in the sandbox is (a body with its length, and a chunked
// one); and a Go client in the benchmark's own process, where it shares the proxy's two-core
// scheduler with the origin too.
func BenchmarkStandIn1GiB(b *testing.B) {
	const total = 1 << 30
	sb := newStandInBench(b)
	run := func(b *testing.B, get func(host string)) {
		var tunnel, terminated time.Duration
		b.SetBytes(2 * total)
		for b.Loop() {
			start := time.Now()
			get("tunnel.example")
			tunnel += time.Since(start)
			start = time.Now()
			get("api.github.com")
			terminated += time.Since(start)
		}
		mbps := func(d time.Duration) float64 { return float64(total) * float64(b.N) / d.Seconds() / (1 << 20) }
		b.ReportMetric(mbps(tunnel), "tunnel-MiB/s")
		b.ReportMetric(mbps(terminated), "terminated-MiB/s")
		b.ReportMetric(100*mbps(terminated)/mbps(tunnel), "terminated-%-of-tunnel")
	}
	curl := func(query string) func(b *testing.B) {
		return func(b *testing.B) {
			curl, err := exec.LookPath("curl")
			if err != nil {
				b.Skip("no curl")
			}
			run(b, func(host string) {
				out, err := exec.Command(curl, "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}",
					"-x", sb.proxy, "--cacert", sb.pem, "-H", "Authorization: token "+ghStandIn,
					"https://"+host+"/?"+query+"bytes="+strconv.Itoa(total)).CombinedOutput()
				if err != nil || string(out) != strconv.Itoa(total) {
					b.Fatalf("curl %s: %v: %s", host, err, out)
				}
			})
		}
	}
	b.Run("curl", curl(""))
	b.Run("curl-chunked", curl("chunked=1&"))
	b.Run("go-client", func(b *testing.B) {
		run(b, func(host string) { sb.get(b, host, total) })
	})
}
