package main

import (
	"strings"
	"testing"
)

// sandbox profile shows what --local-servers and a loopback --allow open on a Mac.
func TestSandboxProfileLocalServersAndLoopbackAllow(t *testing.T) {
	w := newWorld(t)
	bind, inbound := `(allow network-bind (local ip "*:*"))`, `(allow network-inbound (local ip "localhost:*"))`
	pg := `(remote ip "localhost:5432")`
	out, errs, code := w.run("sandbox", "profile", "--rw", w.project)
	if code != 0 || strings.Contains(out, bind) || strings.Contains(out, inbound) || strings.Contains(out, pg) {
		t.Fatalf("default profile (exit %d, %s): local servers or a loopback port open:\n%s", code, errs, out)
	}
	out, errs, code = w.run("sandbox", "profile", "--rw", w.project, "--local-servers", "--allow", "127.0.0.1:5432", "--allow", "example.com")
	if code != 0 || !strings.Contains(out, bind) || !strings.Contains(out, inbound) || !strings.Contains(out, `(allow network-outbound (remote ip "localhost:*"))`) || !strings.Contains(out, pg) {
		t.Fatalf("exit %d, %s: the profile lacks the local servers' rules or the allowed loopback port:\n%s", code, errs, out)
	}
	if _, errs, code = w.run("sandbox", "profile", "--allow", "not a host"); code == 0 {
		t.Fatalf("a bad --allow was accepted: %s", errs)
	}
}

// sandbox profile --link-checks both shows the links and clones a proved Mac allows.
func TestSandboxProfileLinkChecks(t *testing.T) {
	w := newWorld(t)
	allow := "(allow file-link file-clone"
	if out, errs, code := w.run("sandbox", "profile", "--rw", w.project); code != 0 || strings.Contains(out, allow) {
		t.Fatalf("default (exit %d, %s) allows links:\n%s", code, errs, out)
	}
	if out, errs, code := w.run("sandbox", "profile", "--rw", w.project, "--link-checks", "both"); code != 0 || !strings.Contains(out, allow) {
		t.Fatalf("--link-checks both (exit %d, %s) allows no link:\n%s", code, errs, out)
	}
	if _, _, code := w.run("sandbox", "profile", "--link-checks", "source"); code == 0 {
		t.Fatal("--link-checks source was accepted")
	}
}

// On Linux the sandbox's own loopback already serves: with --local-servers a server inside
// works as without it (and its port is published on this machine, publish_linux_test.go).
func TestLocalServersAcceptedOnLinux(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	out, errs, code := w.run("run", "--local-servers", "--network", "none", "--", "sh", "-c", "echo served")
	if code != 0 || !strings.Contains(out, "served") {
		t.Fatalf("run --local-servers: exit %d, out %q, err %q", code, out, errs)
	}
}
