package egresstest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// underUnprivileged marks the copy of this test binary that runs as an ordinary user.
const underUnprivileged = "OPENWORKER_EGRESS_TEST_UNPRIVILEGED"

// TestAsOrdinaryUser runs the tests again as uid 65534 (nobody), whose sandbox's network is
// owned by a user namespace of its own: the relay's rules and routes are made there.
func TestAsOrdinaryUser(t *testing.T) {
	if os.Getenv(underUnprivileged) != "" {
		t.Skip("already the unprivileged run")
	}
	if os.Getuid() != 0 {
		t.Skip("the suite runs as an ordinary user already")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The build cache is root's and closed to others; nobody needs its own copy.
	dir, err := os.MkdirTemp("/var/tmp", "openworker-egress-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "egresstest.test")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err == nil {
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	tests := []string{"TestDirectClientsReachAnAllowedName", "TestDirectClientsRefusedThenACardOpens", "TestLiteralAddressNeedsItsOwnServerName",
		"TestUDPOnlyToTheStub", "TestOpenModeReachesTheInternetNotThisMachine", "TestNoneHasNoNetwork", "TestRoutesAndRulesStayInside"}
	cmd := exec.Command(bin, "-test.count=1", "-test.v", "-test.run", "^("+strings.Join(tests, "|")+")$")
	cmd.Dir = "/"
	cmd.Env = []string{underUnprivileged + "=1", "PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, got)
	}
	for _, name := range tests {
		if !strings.Contains(string(got), "--- PASS: "+name+" ") {
			t.Errorf("as uid 65534, %s did not pass:\n%s", name, got)
		}
	}
}
