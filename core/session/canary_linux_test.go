package session

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// TestCanaryKeepsClearOfTheSandboxsListeners: inside a Linux sandbox 127.0.0.1 is the
// sandbox's own loopback, where its proxy, the relay's listener and the forwarded host ports
// listen. The wall check's canary, on the host's loopback, must never have one of their
// ports, or the check's proof that the host is out of reach turns into a false refusal.
// The ports are read from inside a real sandbox with forwards in it: every TCP listener
// there, and the range the kernel gives the relay's listener its port from.
func TestCanaryKeepsClearOfTheSandboxsListeners(t *testing.T) {
	prov := &linux.Provider{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st := prov.Check(ctx); !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Linux: prov})
	var list []hosts.Entry
	for _, e := range []string{"127.0.0.1:15000", "localhost:15001", "127.0.0.1:33000", "github.com:443"} {
		h, err := hosts.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, h)
	}
	s, err := f.m.Start(ctx, Spec{Provider: sandbox.Linux, Writable: []string{f.project}, Network: policy.Allowlist, Hosts: list})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(runner.ExecArgs{Command: "cat /proc/net/tcp /proc/net/tcp6; echo range; cat /proc/sys/net/ipv4/ip_local_port_range", Timeout: time.Minute}, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("reading the sandbox's listeners: %v %+v", err, res)
	}
	tables, rng, _ := strings.Cut(string(res.Stdout), "range\n")
	listening := map[int]bool{}
	for _, line := range strings.Split(tables, "\n") {
		fs := strings.Fields(line)
		if len(fs) < 4 || fs[3] != "0A" { // TCP_LISTEN
			continue
		}
		_, hexPort, _ := strings.Cut(fs[1], ":")
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			t.Fatalf("a listener's line: %q", line)
		}
		listening[int(p)] = true
	}
	for _, p := range []int{15000, 15001, 33000, s.port} {
		if !listening[p] {
			t.Fatalf("port %d does not listen inside the sandbox (listening: %v); the test sees the wrong table", p, listening)
		}
	}
	var lo, hi int
	if fs := strings.Fields(rng); len(fs) != 2 {
		t.Fatalf("the ephemeral range inside: %q", rng)
	} else {
		lo, _ = strconv.Atoi(fs[0])
		hi, _ = strconv.Atoi(fs[1])
	}
	for range 2000 {
		l, err := s.listenCanary()
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if listening[p] || p >= lo && p <= hi {
			t.Fatalf("the canary took port %d, which inside is a listener's of the sandbox's own (%v) or in the range the relay's listener takes its port from (%d-%d)",
				p, listening[p], lo, hi)
		}
	}
}
