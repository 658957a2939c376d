package linux

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
const underUnprivileged = "OPENWORKER_LINUX_TEST_UNPRIVILEGED"

// TestAsOrdinaryUser runs the wall's main tests again as uid 65534 (nobody), where the
// sandbox rests on unprivileged user namespaces and the builder's ambient capabilities.
// Run as an ordinary user, the whole suite already is this test.
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
	must(t, err)
	// The build cache is root's and closed to others; nobody needs its own copy.
	dir, err := os.MkdirTemp("/var/tmp", "openworker-linux-unpriv-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "linux.test")
	copyFile(t, self, bin)
	tests := []string{"TestCheck", "TestLegitimateWork", "TestEscapeFiles", "TestEscapeProcesses",
		"TestEscapeNetwork", "TestNetworkNamespace", "TestNothingSurvives", "TestPrivateTmpIsolation", "TestProxyListenerInside",
		"TestWritableInsideReadOnly", "TestEscapePlantedSymlink", "TestEscapePlantedSymlinkRace", "TestToolchainLoginsHidden",
		"TestEscapeShellState", "TestEscapeFileToolsOwnProcess", "TestEscapeUnixSocketInSharedFolder",
		"TestLimitsReported", "TestTmpBoundReported", "TestCgroupNotDelegated",
		"TestServerOnTheSandboxesLoopback", "TestProxyListenerAtBothLoopbacks", "TestDevShmIsTheSandboxesOwn", "TestForwardedHostPort",
		"TestNoRouteCountsDirectAttempts", "TestForwardMadeLater",
		"TestEscapeSetID", "TestEscapeProcWrites", "TestEscapeSocketFamilies", "TestEscapeThreads", "TestServedRunnerThreads",
		"TestWallCheckKernelSettings", "TestServedRunnerStopsACommand", "TestListingOnTheWayShowsOnlyTheWall"}
	cmd := exec.Command(bin, "-test.count=1", "-test.v", "-test.run", "^("+strings.Join(tests, "|")+")$")
	cmd.Dir = "/"
	cmd.Env = []string{underUnprivileged + "=1", "PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("as uid 65534, %s did not pass:\n%s", name, out)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}
