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

// openReach is what open mode on Linux is said to reach, wherever it is said.
const openReach = "this machine's loopback and private services"

// TestOpenModeSaysItReachesTheHost: on Linux, open mode shares the host's network, so a
// service on the host's loopback is reachable inside. Until the sandbox has a network of its
// own in every mode, `machine sandbox status`, every result of an open session and the
// first command's output say so; an allowlist session says nothing of it.
func TestOpenModeSaysItReachesTheHost(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	// What is said is true: a host service on loopback answers inside.
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
	if code != 0 || !strings.Contains(out, "host-service") {
		t.Fatalf("exit %d: the host's loopback from open mode:\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, openReach) {
		t.Errorf("run in open mode does not say it reaches %s:\n%s", openReach, errs)
	}
	if _, errs, _ := w.run("run", "--network", "allowlist", "--", "true"); strings.Contains(errs, openReach) {
		t.Errorf("run in allowlist mode says it reaches %s:\n%s", openReach, errs)
	}

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if said := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(said, "On Linux, `--network open`") || !strings.Contains(said, "reach "+openReach) {
		t.Errorf("the README does not say open mode on Linux reaches %s", openReach)
	}
	if out, _, _ := w.run("machine", "sandbox", "status"); !strings.Contains(out, openReach) {
		t.Errorf("machine sandbox status does not say open mode reaches %s:\n%s", openReach, out)
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
			if said := strings.Contains(res.Reach, openReach); said != (network == "open") {
				t.Errorf("%s session, result %d: reach %q", network, i+1, res.Reach)
			}
		}
		c.End(ctx, info.ID)
	}
}
