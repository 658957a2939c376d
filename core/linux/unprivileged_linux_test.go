package linux

import (
	"os"
	"testing"

	"github.com/openworker/openworker/core/tstest"
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
	tests := []string{"TestCheck", "TestLegitimateWork", "TestEscapeFiles", "TestEscapeProcesses",
		"TestEscapeNetwork", "TestNetworkNamespace", "TestNothingSurvives", "TestPrivateTmpIsolation", "TestProxyListenerInside",
		"TestWritableInsideReadOnly", "TestEscapePlantedSymlink", "TestEscapePlantedSymlinkRace", "TestToolchainLoginsHidden",
		"TestEscapeShellState", "TestEscapeFileToolsOwnProcess", "TestEscapeUnixSocketInSharedFolder",
		"TestLimitsReported", "TestTmpBoundReported", "TestCgroupNotDelegated",
		"TestServerOnTheSandboxesLoopback", "TestProxyListenerAtBothLoopbacks", "TestDevShmIsTheSandboxesOwn", "TestForwardedHostPort",
		"TestNoRouteCountsDirectAttempts", "TestForwardMadeLater", "TestDialInsideReachesTheSandboxesServer",
		"TestEscapeSetID", "TestEscapeProcWrites", "TestEscapeSocketFamilies", "TestEscapeThreads", "TestServedRunnerThreads",
		"TestWallCheckKernelSettings", "TestServedRunnerStopsACommand", "TestListingOnTheWayShowsOnlyTheWall"}
	tstest.AsNobody(t, tests, underUnprivileged+"=1")
}
