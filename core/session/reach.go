package session

import (
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// OpenReach says what a session behind wall e with network n reaches beyond the internet
// when that is this machine's own services, or "". Open mode means the internet, never the
// machine's loopback or private services; the Linux wall does not hold to that yet: in open
// mode the sandbox shares the host's network (only files are walled), so until it has a
// network of its own in every mode, every result, `machine sandbox status` and the README
// say so.
func OpenReach(e sandbox.Enforcement, n policy.Network) string {
	if e != sandbox.Linux || n != policy.Open {
		return ""
	}
	return "network open on Linux shares this machine's network: commands reach this machine's loopback and private services " +
		"(databases, local APIs, a browser's debugging port), not only the internet; use --network allowlist to keep them out"
}
