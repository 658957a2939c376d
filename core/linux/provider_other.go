//go:build !linux

package linux

import (
	"context"
	"errors"
	"runtime"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// MaybeRunInit does nothing on this system: there is no wall builder to become.
func MaybeRunInit() {}

// CoarsenMonitor does nothing: timer slack is Linux's.
func CoarsenMonitor() {}

var errLinuxOnly = errors.New("the linux sandbox runs only on Linux; this is " + runtime.GOOS + "; use the seatbelt provider on macOS")

// Check says the provider cannot run here.
func (*Provider) Check(context.Context) sandbox.Status {
	return sandbox.Status{
		Provider: sandbox.Linux,
		Tier:     "not available: the linux provider runs only on Linux",
		Reason:   errLinuxOnly.Error(),
	}
}

// Prepare does nothing: there is no wall to prepare.
func (*Provider) Prepare(policy.Network) {}

type spare struct{}

type cgroupHost struct{}

type tmpState struct{}

// Start refuses: there are no namespaces or Landlock to build a wall from.
func (*Provider) Start(context.Context, *policy.Policy, sandbox.RunnerSpec) (sandbox.Process, error) {
	return nil, errLinuxOnly
}
