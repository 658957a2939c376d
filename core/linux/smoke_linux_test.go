package linux

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/openworker/openworker/core/sandbox"
)

func TestCheck(t *testing.T) {
	st := (&Provider{}).Check(context.Background())
	if !st.OK || st.Provider != sandbox.Linux {
		t.Fatalf("check failed: %+v", st)
	}
	want := "tier 1 (linux: namespaces; landlock unavailable (the namespaces still hold))"
	if abi, err := ll.LandlockGetABIVersion(); err == nil && abi > 0 {
		want = "tier 1 (linux: namespaces+landlock ABI " + itoa(min(abi, maxKnownABI)) + ")"
	}
	if st.Tier != want {
		t.Errorf("tier %q, want %q", st.Tier, want)
	}
	for _, part := range []string{"minimal root (pivot_root)", "capabilities dropped", "no_new_privs"} {
		if !slices.Contains(st.Details, part) {
			t.Errorf("details %q lack %q", st.Details, part)
		}
	}
	if !strings.HasPrefix(st.Details[0], "namespaces (user, mount, pid, ipc, uts, net)") {
		t.Errorf("details %q do not start with the namespaces", st.Details)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
