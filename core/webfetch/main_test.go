package webfetch

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no fetch leaves a goroutine behind: a connection of every hop, every
// refusal and every timeout is closed when Fetch returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
