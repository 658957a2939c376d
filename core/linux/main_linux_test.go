package linux

import (
	"io"
	"os"
	"testing"
)

// idleRunner makes this test binary stand in for the tool runner: it waits on fd 3 until
// the core's end closes, as the real runner does between tool calls.
const idleRunner = "OPENWORKER_LINUX_TEST_IDLE_RUNNER"

func TestMain(m *testing.M) {
	MaybeRunInit()
	if group := os.Getenv(underAttempts); group != "" {
		runAttempts(group)
	}
	if os.Getenv(idleRunner) != "" {
		io.Copy(io.Discard, os.NewFile(3, "conn"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}
