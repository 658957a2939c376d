package linux

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
)

// TestForwardIsTheAddressTheEntryNames: `localhost:PORT` forwards 127.0.0.1 and ::1 at
// PORT, not every address of 127.0.0.0/8: a host service listening on 127.0.0.2 at the same
// port (a DNS stub on 127.0.0.53, a second database) stays out of reach, as the proxy keeps
// it for the same entry.
func TestForwardIsTheAddressTheEntryNames(t *testing.T) {
	if !exists("/usr/bin/curl") {
		t.Skip("/usr/bin/curl is absent")
	}
	serve := func(network, addr, body string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("listening on %s: %v", addr, err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l
	}
	one := serve("tcp4", "127.0.0.1:0", "host-at-127.0.0.1")
	port := one.Addr().(*net.TCPAddr).Port
	serve("tcp4", fmt.Sprintf("127.0.0.2:%d", port), "host-at-127.0.0.2")

	w := newWorld(t)
	p := w.policy(t, policy.Allowlist, 18085)
	p.Forwards = []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))}
	s := start(t, w, p, fmt.Sprintf(`for a in 127.0.0.1 127.0.0.2; do curl -sS --noproxy '*' --max-time 5 http://$a:%d/; echo " $a=$?"; done`, port))
	ls, refused := s.proc.(interface {
		ForwardListeners() (map[int]net.Listener, map[int]string)
	}).ForwardListeners()
	if len(refused) != 0 || ls[port] == nil {
		t.Fatalf("forward listeners %v, refused %v", ls, refused)
	}
	entry, err := hosts.Parse(fmt.Sprintf("localhost:%d", port))
	must(t, err)
	px, err := proxy.New(proxy.Options{Token: proxy.NewToken(), Allow: []hosts.Entry{entry}})
	must(t, err)
	t.Cleanup(func() { px.Close() })
	if _, err := px.Forward(ls[port], port); err != nil {
		t.Fatal(err)
	}
	out, _ := s.wait(t)
	if !strings.Contains(out, "host-at-127.0.0.1 127.0.0.1=0") {
		t.Errorf("localhost:%d did not reach the host's 127.0.0.1:\n%s", port, out)
	}
	if strings.Contains(out, "host-at-127.0.0.2") {
		t.Errorf("localhost:%d reached the host's 127.0.0.2:\n%s", port, out)
	}
	refusedByProxy := px.Blocked(time.Now().Add(-time.Minute), time.Now())
	if len(refusedByProxy) != 1 || refusedByProxy[0].Host != "127.0.0.2" {
		t.Errorf("the proxy recorded %+v, want one refusal of 127.0.0.2", refusedByProxy)
	}
}
