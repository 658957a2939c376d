package backend

import (
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
)

// Limits are the settings' limits as a provider takes them.
func Limits(l config.Limits) sandbox.Limits {
	amount := func(s config.Size) sandbox.Amount { return sandbox.Amount{Bytes: s.Bytes, Percent: s.Percent} }
	return sandbox.Limits{Processes: l.MaxProcesses, Memory: amount(l.MaxMemory), CPUWeight: l.CPUWeight, Tmp: amount(l.MaxTmp)}
}
