package egresstest

import (
	"os"
	"testing"

	"github.com/openworker/openworker/core/tstest"
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
	tests := []string{"TestDirectClientsReachAnAllowedName", "TestDirectClientsRefusedThenACardOpens", "TestLiteralAddressNeedsItsOwnServerName",
		"TestUDPOnlyToTheStub", "TestOpenModeReachesTheInternetNotThisMachine", "TestNoneHasNoNetwork", "TestRoutesAndRulesStayInside"}
	tstest.AsNobody(t, tests, underUnprivileged+"=1")
}
