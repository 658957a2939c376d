package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/apitype"
)

// openReach is what open mode on Linux is said to reach where it shares the host's network;
// openKept what it says where the relay keeps this machine out.
const (
	openReach = "this machine's loopback and private services"
	openKept  = "this machine's loopback and private services stay out of reach"
)

// TestOpenModeSaysWhatItReaches: on Linux with the relay, open mode has a network of its own:
// a service on the host's loopback is not reachable inside, and `machine sandbox status` says
// so. Without the relay (a kernel without nf_tables) open mode shares the host's network, and
// the status, every result of an open session and the first command's output say that. An
// allowlist session says nothing of it either way.
func TestOpenModeSaysWhatItReaches(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	status, _, _ := w.run("machine", "sandbox", "status")
	own := strings.Contains(status, openKept)
	// What is said is true: a host service on loopback answers inside, or does not.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host-service\n"))
			c.Close()
		}
	}()
	out, errs, code := w.run("run", "--network", "open", "--", "python3", "-c",
		"import socket; print(socket.create_connection(('127.0.0.1', "+strings.Split(l.Addr().String(), ":")[1]+"), timeout=5).recv(64).decode())")
	if reached := code == 0 && strings.Contains(out, "host-service"); reached == own {
		t.Fatalf("exit %d (open mode has a network of its own: %v): the host's loopback from open mode:\n%s%s", code, own, out, errs)
	}
	if strings.Contains(errs, openReach) == own {
		t.Errorf("run in open mode (own network: %v) says or does not say it reaches %s:\n%s", own, openReach, errs)
	}
	if _, errs, _ := w.run("run", "--network", "allowlist", "--", "true"); strings.Contains(errs, openReach) {
		t.Errorf("run in allowlist mode says it reaches %s:\n%s", openReach, errs)
	}

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	said := strings.Join(strings.Fields(string(readme)), " ")
	if !strings.Contains(said, "With `--network open` (or `sandbox_network_profile = \"open\"`) the relay admits the internet and keeps "+openReach) ||
		!strings.Contains(said, "open mode shares this machine's network") {
		t.Errorf("the README does not say what open mode on Linux reaches")
	}
	if !strings.Contains(status, openReach) {
		t.Errorf("machine sandbox status does not say what open mode reaches:\n%s", status)
	}

	_, stop := w.daemon()
	defer stop()
	c := apiclient.New(api.SocketPath(w.state))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, network := range []string{"open", "allowlist"} {
		info, err := c.Start(ctx, apitype.StartRequest{Provider: "linux", Writable: []string{w.project}, Network: network})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			res, err := c.Exec(ctx, info.ID, apitype.ExecRequest{Command: "true"})
			if err != nil {
				t.Fatal(err)
			}
			if said := strings.Contains(res.Reach, openReach); said != (network == "open" && !own) {
				t.Errorf("%s session, result %d: reach %q", network, i+1, res.Reach)
			}
		}
		c.End(ctx, info.ID)
	}
}
