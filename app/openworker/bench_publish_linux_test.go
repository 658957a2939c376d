package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/tstest"
)

// loadSrc is a Go program that makes its second argument's number of HTTP GETs of its first
// argument, each on a new connection (a browser's first request, a test suite's), or with a
// third argument "keep" all on one (a browser's next requests), and prints the mean time of
// one in nanoseconds.
const loadSrc = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	c := http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: len(os.Args) < 4 || os.Args[3] != "keep"}}
	start := time.Now()
	for i := 0; i < n; i++ {
		resp, err := c.Get(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	fmt.Println(time.Since(start).Nanoseconds() / int64(n))
}
`

// BenchmarkPublishedRequest is what a published port costs: a request to a server in a
// session, on a new connection each, made from this machine through the port published for
// it, and made inside the session to the same server, on a new connection each and on one
// kept alive. Both are timed by the same program; each reports ns/op, and the published
// port's also the difference as extra-us.
//
//	go test -run '^$' -bench PublishedRequest -benchtime 2000x ./app/openworker/
func BenchmarkPublishedRequest(b *testing.B) {
	w := benchWorld(b)
	server := goProgram(b, w, "server", serverSrc)
	load := goProgram(b, w, "load", loadSrc)
	cl, _ := benchDaemon(b, w, 4*time.Second)
	ctx := context.Background()
	info, err := cl.Start(ctx, api.StartRequest{Provider: "auto", Writable: []string{w.project}, LocalServers: true})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.End(ctx, info.ID)
	port := hostFreePort(b)
	if _, err := cl.Exec(ctx, info.ID, api.ExecRequest{Command: fmt.Sprintf("%s %d bench >/dev/null 2>&1 &", server, port)}); err != nil {
		b.Fatal(err)
	}
	host := 0
	if err := tstest.Poll(10*time.Second, func() error {
		ss, err := cl.Sessions(ctx)
		if err != nil {
			return err
		}
		for _, s := range ss {
			for _, p := range s.Published {
				if s.ID == info.ID && p.Port == port && p.HostPort != 0 {
					host = p.HostPort
					return nil
				}
			}
		}
		return fmt.Errorf("port %d is not published", port)
	}); err != nil {
		b.Fatal(err)
	}
	mean := func(b *testing.B, out []byte) float64 {
		ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			b.Fatalf("the load program said %q", out)
		}
		return ns
	}
	for _, mode := range []string{"new", "keep"} {
		var inside float64
		b.Run(mode+"-connection/inside", func(b *testing.B) {
			r, err := cl.Exec(ctx, info.ID, api.ExecRequest{Command: fmt.Sprintf("%s http://127.0.0.1:%d/ %d %s", load, port, b.N, mode)})
			if err != nil || r.ExitCode != 0 {
				b.Fatalf("inside: %v %+v", err, r)
			}
			inside = mean(b, r.Stdout)
			b.ReportMetric(inside, "ns/op")
		})
		b.Run(mode+"-connection/through-published-port", func(b *testing.B) {
			out, err := exec.Command(load, fmt.Sprintf("http://127.0.0.1:%d/", host), strconv.Itoa(b.N), mode).Output()
			if err != nil {
				b.Fatalf("through the published port: %v", err)
			}
			ns := mean(b, out)
			b.ReportMetric(ns, "ns/op")
			if inside > 0 {
				b.ReportMetric((ns-inside)/1000, "extra-us")
			}
		})
	}
}
