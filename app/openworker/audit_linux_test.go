package main

import (
	"bufio"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// The audit trail names what interrupted a command: the signal the person's session exec
// got, or its going away, never SIGINT for all of them.
func TestAuditNamesTheInterruptionsCause(t *testing.T) {
	w := newWorld(t)
	_, stop := w.daemon() // sessions without a provider named are direct: no wall is needed here
	t.Cleanup(stop)
	id, errs, code := w.run("session", "start")
	if code != 0 {
		t.Fatalf("session start: %s", errs)
	}
	id = strings.TrimSpace(id)
	t.Cleanup(func() { w.run("session", "end", id) })
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		want string
	}{
		{"term", syscall.SIGTERM, "by SIGTERM"},
		{"hup", syscall.SIGHUP, "by SIGHUP"},
		{"killed_client", syscall.SIGKILL, "its caller went away"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := w.cmd("session", "exec", id, "echo started-"+tc.name+"; while :; do sleep 0.05; done")
			stdout, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "started-"+tc.name+"\n" {
				c.Process.Kill()
				t.Fatalf("first line %q", line)
			}
			c.Process.Signal(tc.sig)
			c.Wait()
			tstest.WaitFor(t, 15*time.Second, func() error {
				out, _, _ := w.run("audit", "--session", id)
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(l, "started-"+tc.name) && strings.Contains(l, "(interrupted)") {
						if !strings.Contains(l, tc.want) {
							t.Fatalf("the audit trail says %q, want %q", l, tc.want)
						}
						return nil
					}
				}
				return fmt.Errorf("no end record of the interrupted call yet:\n%s", out)
			})
		})
	}
}
