package linux

import (
	"fmt"
	"os"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/openworker/openworker/core/policy"
)

// landlockParts names what Landlock enforces at a given ABI, for Status and Active.
func landlockParts(abi int, network policy.Network) []string {
	// No "tcp": see applyLandlock.
	parts := []string{"files"}
	if abi >= 6 {
		parts = append(parts, "scopes")
	}
	if abi >= 9 {
		parts = append(parts, "unix sockets")
	}
	if abi >= 10 && network != policy.Open {
		parts = append(parts, "udp")
	}
	return parts
}

func landlockWord(abi int, network policy.Network) string {
	return fmt.Sprintf("landlock ABI %d (%s)", abi, strings.Join(landlockParts(abi, network), ", "))
}

// applyLandlock restricts every thread (and so the runner forked from this one) to the same
// file rules as the mounts, and no abstract Unix sockets or signals outside the sandbox, as
// far as the kernel's ABI goes. It is the second wall: if a mount were ever wrong, Landlock
// still denies what the policy did not name. Landlock cannot narrow a grant, so a read-only
// folder inside a writable one is enforced by its read-only mount alone.
//
// TCP is left to the network namespace. Landlock's TCP rules name ports, never addresses,
// so the only TCP rules that let a test suite or a dev server listen on a port of its
// choosing and be reached at it are no rules at all: allowing bind and connect on every port
// is what "not handled" means, and a ruleset of 65536 port rules would cost a system call
// each. Nothing is lost by it: in allowlist and none modes the sandbox's network namespace
// holds only its own lo, so a TCP socket inside reaches only what listens in there — the
// sandbox's own servers, the proxy's listener and the forwarded host ports, which the core
// made and relays under the allow list — and connecting anywhere else fails with
// "Network is unreachable" before a packet is sent. In open mode the sandbox shares the
// host's network and may bind and connect anywhere the host can, the host's own loopback
// services included: open mode walls files only. UDP stays handled where the kernel can
// (ABI 10): no UDP at all.
//
// No Landlock in the kernel is not an error: it returns the word saying so.
func applyLandlock(s *wallSetup, binds []bindPlan) (string, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return "landlock unavailable (the namespaces still hold)" + unixSocketGap(0), nil
	}
	cfg := landlock.V11
	cfg.HandledAccessNet &^= ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	if s.Network == policy.Open {
		// Open mode shares the host's network; only files are walled.
		cfg.HandledAccessNet = 0
	}
	// Before ABI 8 each thread that restricts itself gets a domain of its own, and a domain
	// with the signal scope may signal only inside itself: the runner's other threads, which
	// stop commands forked from this one, could not. So this thread, from which the commands
	// come, takes the whole ruleset first, and then every thread the same rules without
	// that scope. (A second layer with the scope alone would not do: a layer that handles no
	// file access still makes the kernel refuse a rename between folders, EXDEV.) The PID
	// namespace keeps the other threads' signals inside the sandbox.
	tsync := abi >= 8
	signalScope := !tsync && cfg.Scoped&ll.ScopeSignal != 0 && abi >= 6
	var rules []landlock.Rule
	// One rule per bind (absent system paths and symlinks, whose targets have their own
	// rules, were never bound).
	for _, b := range binds {
		switch {
		case b.dir && b.Writable && b.Tmp:
			// The private tmp is where the core serves the session's own sockets from
			// outside (the SSH agent of a login shared through OpenWorker): from ABI 9 a
			// socket bound outside is reached only where a rule says so. Only the core binds
			// sockets there from outside: the folder is the session's own, owner-only.
			rules = append(rules, landlock.RWDirs(b.Dst).WithRefer().WithResolveUnix())
		case b.dir && b.Writable:
			// Refer lets git and package managers move files between folders of the same
			// writable tree; it never reaches outside the writable folders.
			rules = append(rules, landlock.RWDirs(b.Dst).WithRefer())
		case b.dir:
			rules = append(rules, landlock.RODirs(b.Dst))
		case b.Writable:
			rules = append(rules, landlock.RWFiles(b.Dst))
		default:
			rules = append(rules, landlock.ROFiles(b.Dst))
		}
	}
	rules = append(rules,
		// Any folder may be listed: the root holds only what is bound and the folders on
		// the way to it, and a session folder's way is what every shell prompt and file
		// picker lists. Reading, writing and running files keep to the binds' rules. The
		// person's home, when on the way, is unlistable by its mode (hideHome).
		landlock.PathAccess(ll.AccessFSReadDir, "/"),
		landlock.RODirs("/proc"),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full"),
		landlock.RWDirs("/dev/shm"),
		landlock.ROFiles("/dev/random", "/dev/urandom"),
	)
	if s.Relay {
		rules = append(rules, landlock.ROFiles("/etc/resolv.conf"))
	}
	if signalScope {
		fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
		if err == nil && fd >= 0 {
			err = ll.LandlockRestrictSelf(fd, flags)
			closeFD(fd)
		}
		if err != nil {
			return "", fmt.Errorf("this thread's ruleset: %w", err)
		}
		cfg.Scoped &^= ll.ScopeSignal
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return "", err
	}
	if fd < 0 {
		return "landlock unavailable (the namespaces still hold)" + unixSocketGap(0), nil
	}
	defer closeFD(fd)
	// On every thread: from ABI 8 the kernel does it (TSYNC), before that each thread
	// makes the call (psx); no_new_privs is set on all of them already.
	if tsync {
		err = ll.LandlockRestrictSelf(fd, flags|ll.FlagRestrictSelfTSync)
	} else {
		err = ll.AllThreadsLandlockRestrictSelf(fd, flags)
	}
	if err != nil {
		return "", err
	}
	return landlockWord(min(abi, maxKnownABI), s.Network) + unixSocketGap(abi), nil
}

// resolveUnixABI is the Landlock ABI that refuses connecting to (and sending to) a pathname
// Unix socket bound outside the sandbox: a file rule grants it only with WithResolveUnix,
// which no rule here asks for, while a socket bound inside stays reachable from inside.
const resolveUnixABI = 9

// unixSocketGap says what the wall does not hold below resolveUnixABI, and is empty from
// it on. Nothing else holds it: a pathname socket is found by its file, whatever network
// namespace it was made in, so the sandbox's own network does not hide it, and seccomp
// cannot read the path a connect names. A host service listening on a socket in a shared
// folder (git's fsmonitor in .git, an editor's, a database's) would answer from inside;
// the wall's parts, and so every session's summary and the machine's status, say so.
func unixSocketGap(abi int) string {
	if abi >= resolveUnixABI {
		return ""
	}
	have := "none"
	if abi > 0 {
		have = fmt.Sprintf("ABI %d", abi)
	}
	return fmt.Sprintf("; not walled on this kernel: Unix sockets that a process outside the sandbox listens on in a shared folder (Landlock ABI %d refuses them; this kernel has %s)", resolveUnixABI, have)
}

// maxKnownABI is the newest Landlock ABI go-landlock's V11 preset enforces; a newer kernel
// still runs with these rules only.
const maxKnownABI = 11

func closeFD(fd int) { _ = os.NewFile(uintptr(fd), "landlock-ruleset").Close() }
