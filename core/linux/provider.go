package linux

import (
	"context"
	"sync"

	"github.com/openworker/openworker/core/sandbox"
)

var (
	_ sandbox.Provider = (*Provider)(nil)
	_ sandbox.Preparer = (*Provider)(nil)
)

// Provider starts runners behind the Linux wall. The zero value is ready to use.
type Provider struct {
	mu    sync.Mutex
	spare *spare // a builder Prepare started, for the next Start
	// cgroups is where sandboxes' cgroups are made; nil is this machine's hierarchies.
	cgroups *cgroupHost
	// tmps are the private tmp folders BoundTmp was asked to bound, by path; under mu.
	tmps map[string]tmpState
	// CheckTmp, when set, is the folder Check uses as its private tmp: it is mounted over and
	// released there, but neither made nor removed, so that a caller who recorded it can
	// remove it should the process die during the check. Empty: a new folder in the OS's
	// temporary folder, removed when the check ends.
	CheckTmp string
}

// Name is the enforcement word every result produced behind this wall carries.
func (*Provider) Name() sandbox.Enforcement { return sandbox.Linux }

// Status reports whether sessions can run here, by building a wall and running `true` in it.
func (pr *Provider) Status(ctx context.Context) sandbox.Status { return pr.Check(ctx) }
