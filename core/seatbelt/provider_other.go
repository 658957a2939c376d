//go:build !darwin

package seatbelt

import (
	"context"
	"fmt"
	"runtime"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

func (pr *Provider) unavailable() sandbox.Status {
	return sandbox.Status{
		Provider: sandbox.Seatbelt,
		Reason: fmt.Sprintf("Seatbelt exists only on macOS and this machine runs %s; use the %s provider here, or run on a Mac",
			runtime.GOOS, sandbox.Linux),
	}
}

// Status says that Seatbelt exists only on macOS.
func (pr *Provider) Status(context.Context) sandbox.Status { return pr.unavailable() }

// Check says that Seatbelt exists only on macOS.
func (pr *Provider) Check(context.Context) sandbox.Status { return pr.unavailable() }

// CheckPolicy says that Seatbelt exists only on macOS.
func (pr *Provider) CheckPolicy(context.Context, *policy.Policy) sandbox.Status {
	return pr.unavailable()
}

// Start refuses: there is no Seatbelt to start the runner under.
func (pr *Provider) Start(context.Context, *policy.Policy, sandbox.RunnerSpec) (sandbox.Process, error) {
	return nil, fmt.Errorf("seatbelt: %s", pr.unavailable().Reason)
}

// ProbeLinks says that Seatbelt exists only on macOS.
func (pr *Provider) ProbeLinks(context.Context) (LinkAnswer, error) {
	return LinkAnswer{Checks: LinkChecksUnknown}, fmt.Errorf("seatbelt: %s", pr.unavailable().Reason)
}

// osVersion is empty: there is no macOS version off macOS.
func osVersion() string { return "" }
