package linux

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// A server on the sandbox's own loopback is seen listening from outside and reached with a
// socket its first process makes, at 127.0.0.1 and at [::1], whatever address it listens at;
// nothing but the sandbox's loopback is dialled, and its loopback is not this machine's.
func TestDialInsideReachesTheSandboxesServer(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	w := newWorld(t)
	const v4, any6 = 18191, 18192
	s := start(t, w, w.policy(t, policy.None, 0), fmt.Sprintf(`python3 -c '
import socket, threading
def serve(s, word):
    while True:
        c, _ = s.accept()
        c.sendall(word)
        c.close()
a = socket.socket(); a.bind(("127.0.0.1", %d)); a.listen(8)
b = socket.socket(socket.AF_INET6); b.bind(("::", %d)); b.listen(8)
threading.Thread(target=serve, args=(a, b"four"), daemon=True).start()
serve(b, b"six")
'`, v4, any6))
	pub, ok := s.proc.(sandbox.Publisher)
	if !ok {
		t.Fatal("the Linux sandbox is not a Publisher")
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:18191"), netip.MustParseAddrPort("[::]:18192")}
	tstest.WaitFor(t, 10*time.Second, func() error {
		ls, err := pub.Listening()
		if err != nil {
			return err
		}
		for _, a := range want {
			if !slices.Contains(ls, a) {
				return fmt.Errorf("listening %v, want %v among them", ls, a)
			}
		}
		return nil
	})
	ctx := context.Background()
	for _, tc := range []struct{ to, word string }{{"127.0.0.1:18191", "four"}, {"127.0.0.1:18192", "six"}, {"[::1]:18192", "six"}} {
		c, err := pub.DialInside(ctx, netip.MustParseAddrPort(tc.to))
		if err != nil {
			t.Fatalf("DialInside %s: %v", tc.to, err)
		}
		b, _ := io.ReadAll(c)
		c.Close()
		if string(b) != tc.word {
			t.Errorf("%s answered %q, want %q", tc.to, b, tc.word)
		}
	}
	// The same ports on this machine's loopback are not the sandbox's.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:18191", time.Second); err == nil {
		b, _ := io.ReadAll(c)
		c.Close()
		if string(b) == "four" {
			t.Error("the sandbox's server answered on this machine's loopback")
		}
	}
	if _, err := pub.DialInside(ctx, netip.MustParseAddrPort("127.0.0.1:18193")); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a port nothing listens at inside: %v, want connection refused", err)
	}
	for _, to := range []string{"10.0.0.1:80", "192.168.1.1:443", "[2001:db8::1]:80", "127.0.0.1:0"} {
		if _, err := pub.DialInside(ctx, netip.MustParseAddrPort(to)); err == nil || !strings.Contains(err.Error(), "not an address of the sandbox's own loopback") {
			t.Errorf("DialInside %s: %v, want a refusal before anything is made", to, err)
		}
	}
	// Once the sandbox ends, nothing is made any more.
	s.proc.Kill()
	s.proc.Wait()
	if _, err := pub.DialInside(ctx, netip.MustParseAddrPort("127.0.0.1:18191")); err == nil {
		t.Error("DialInside after the sandbox ended")
	}
}

// A table as the kernel writes it: the listeners' local addresses, and nothing else.
func TestParseListening(t *testing.T) {
	tcp := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 124 1 0000000000000000 100 0 0 10 0
   2: 0100007F:0BB8 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 125 1 0000000000000000 20 4 30 10 -1
`)
	tcp6 := []byte(`  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0BB9 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 126 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:4E20 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 127 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:0BBA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 128 1 0000000000000000 100 0 0 10 0
`)
	got, err := parseListening(tcp)
	if err != nil || !slices.Equal(got, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:3000"), netip.MustParseAddrPort("0.0.0.0:8080")}) {
		t.Errorf("tcp: %v %v", got, err)
	}
	got, err = parseListening(tcp6)
	if err != nil || !slices.Equal(got, []netip.AddrPort{netip.MustParseAddrPort("[::1]:3001"), netip.MustParseAddrPort("[::]:20000"), netip.MustParseAddrPort("127.0.0.1:3002")}) {
		t.Errorf("tcp6: %v %v", got, err)
	}
	if _, err := parseListening([]byte("head\n   0: 0100007G:0BB8 00000000:0000 0A\n")); err == nil {
		t.Error("a malformed address was read")
	}
}

// BenchmarkDialInside is the cost of one connection from outside to a server on the
// sandbox's own loopback: a socket asked of the sandbox's first process, connected.
//
//	go test -run '^$' -bench DialInside -benchtime 5000x ./core/linux/
func BenchmarkDialInside(b *testing.B) {
	// The system's: a wall without the home folder's toolchains runs only what is outside it.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		b.Skip("/usr/bin/python3 is not installed")
	}
	_, p := benchWorld(b)
	proc, err := (&Provider{}).Start(context.Background(), p, sandbox.RunnerSpec{Path: python, Dir: "/", Args: []string{"-c", `
import socket
a = socket.socket(); a.bind(("127.0.0.1", 18291)); a.listen(128)
while True:
    c, _ = a.accept()
    c.close()
`}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { proc.Kill(); proc.Wait() })
	pub := proc.(sandbox.Publisher)
	to := netip.MustParseAddrPort("127.0.0.1:18291")
	if err := tstest.Poll(10*time.Second, func() error {
		c, err := pub.DialInside(context.Background(), to)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := pub.DialInside(context.Background(), to)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
