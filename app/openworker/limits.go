package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
)

// limitsChecker is a provider whose check can build its wall with a session's limits, so
// that the status says which of them hold on this machine.
type limitsChecker interface {
	CheckWith(ctx context.Context, l sandbox.Limits) sandbox.Status
}

// proveLimits is prove with the settings' limits where the provider takes them.
func proveLimits(ctx context.Context, p sandbox.Provider, l config.Limits) sandbox.Status {
	if c, ok := p.(limitsChecker); ok {
		return c.CheckWith(ctx, backend.Limits(l))
	}
	return prove(ctx, p)
}

// limitsLine says what the settings ask of each sandbox and of the proxies.
func limitsLine(l config.Limits) string {
	weight := "100 a CPU"
	if l.CPUWeight != 0 {
		weight = strconv.Itoa(l.CPUWeight)
	}
	return fmt.Sprintf("processes %d, memory %s, cpu weight %s, private tmp %s a sandbox; proxy connections %d a session, %d in all",
		l.MaxProcesses, l.MaxMemory, weight, l.MaxTmp, l.MaxProxyConnections, l.MaxProxyConnectionsTotal)
}

// saysLimits says whether a status's details say anything of the limits.
func saysLimits(details []string) bool {
	for _, d := range details {
		if strings.HasPrefix(d, "limit") || strings.HasPrefix(d, "private tmp") {
			return true
		}
	}
	return false
}
