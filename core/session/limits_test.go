package session

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// TestResultsSayLimits: every result says what bounds the sandbox; a provider that sets no
// limits is said to.
func TestResultsSayLimits(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	r, err := s.Exec(runner.ExecArgs{Command: "true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"no limits: the direct provider sets none"}; !slices.Equal(r.Limits, want) {
		t.Errorf("limits %q, want %q", r.Limits, want)
	}
}

// TestSharedProxyCap: the manager's sessions share one cap on proxy connections, which
// the settings can change while they run: past it a session's proxy answers 503.
func TestSharedProxyCap(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	if got := f.m.proxyConns.Max(); got != 1024 {
		t.Errorf("default cap %d, want 1024", got)
	}
	f.m.SetProxyConnsTotal(1)
	var addrs []string
	for range 2 {
		s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.Allowlist})
		if err != nil {
			t.Fatal(err)
		}
		defer s.End()
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(s.ProxyPort()))
	}
	// The first session's connection holds the one place while it says nothing.
	first, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	tstest.WaitFor(t, 5*time.Second, func() error {
		if f.m.proxyConns.Open() < 1 {
			return errors.New("the first connection never took its place")
		}
		return nil
	})
	second, err := net.Dial("tcp", addrs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(second)
	if !strings.HasPrefix(string(b), "HTTP/1.1 503") || !strings.Contains(string(b), "sessions together already have 1 connections open") {
		t.Errorf("the other session's connection past the shared cap got %q, want a 503 naming it", b)
	}
}
