package linux

import (
	"context"
	"os"
	"slices"
	"strconv"
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
	parts := []string{"minimal root (pivot_root)", "/proc read-only", "capabilities dropped", "no_new_privs",
		"seccomp (no new user namespaces, no kernel keyrings, no set-user-ID or set-group-ID files, " +
			"no io_uring, sockets of AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only)"}
	namespaces := "namespaces (mount, pid, ipc, uts, net)"
	if ownUserNS() {
		namespaces = "namespaces (user, mount, pid, ipc, uts, net)"
	}
	for _, part := range parts {
		if !slices.Contains(st.Details, part) {
			t.Errorf("details %q lack %q", st.Details, part)
		}
	}
	if st.Details[0] != namespaces {
		t.Errorf("details %q do not start with %q", st.Details, namespaces)
	}
	if os.Geteuid() != 0 && !ownUserNS() {
		t.Errorf("uid %d: the builder must make a user namespace of its own", os.Geteuid())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
