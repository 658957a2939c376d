// Package sandbox defines what every enforcement back end provides: a way to start the tool
// runner behind a wall built from a policy.Policy, and to say whether it can. The back ends
// live in their own packages (seatbelt on macOS, linux on Linux); "direct" runs without a wall.
//
// It holds no enforcement itself, only the contract the session code relies on.
package sandbox

import (
	"context"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/openworker/openworker/core/policy"
)

// Enforcement names the mode that produced a result. These words appear in every tool
// result, tool-call event and audit line.
type Enforcement string

const (
	Seatbelt Enforcement = "seatbelt"
	Linux    Enforcement = "linux"
	Direct   Enforcement = "direct"
)

// Status says whether a provider can run sessions on this machine, and if not, why.
type Status struct {
	Provider Enforcement
	// OK is true when sessions can run.
	OK bool
	// Tier is the one-line summary printed by `openworker sandbox check`, for example
	// "tier 1 (linux: namespaces+landlock ABI 6)".
	Tier string
	// Reason says why sessions cannot run, in words a person can act on. Empty when OK.
	Reason string
	// Details are extra facts for `openworker machine sandbox status`
	// ("landlock: ABI 6 (files, tcp, scopes)", "sandbox-exec: /usr/bin/sandbox-exec").
	Details []string
}

// RunnerSpec is the process a provider starts inside the wall: the tool runner.
type RunnerSpec struct {
	Path string   // the runner's binary
	Args []string // argv[1:]
	Env  []string // the full environment (already filtered by the session)
	Dir  string   // working folder inside the wall
	// Conn is the runner's end of the socketpair to the core; it becomes fd 3 in the runner.
	Conn *os.File
	// Stderr receives the runner's (and the wall builder's) own error output. May be nil.
	Stderr *os.File
	// Serve says Path is this very binary in runner mode, so a provider whose wall is built
	// by this binary may serve the runner on Conn from the wall's own first process instead
	// of starting a second one (linux: one program start less per session). Providers that
	// cannot ignore it.
	Serve bool
	// Limits bound the sandbox's processes, memory, CPU share and private tmp, where the
	// provider can; the zero value is the defaults.
	Limits Limits
}

// Provider builds a wall from a policy and starts the runner behind it.
type Provider interface {
	Name() Enforcement
	// Status reports whether sessions can run here. It may run a trivial sandboxed probe.
	Status(ctx context.Context) Status
	// Start starts spec behind the wall described by p and returns once the runner is
	// running. It fails closed: any part of the wall that cannot be built is an error and
	// nothing is left running.
	Start(ctx context.Context, p *policy.Policy, spec RunnerSpec) (Process, error)
}

// Preparer is a Provider that can start the part of a wall that does not depend on the
// policy (its processes and namespaces) ahead of Start, so that it overlaps with the
// caller's own preparations. Start takes what Prepare started when the network mode
// matches; what no Start takes ends with the calling process.
type Preparer interface {
	Prepare(network policy.Network)
}

// Process is a runner started by a Provider.
type Process interface {
	// Pid is the runner's (or its wall builder's) process ID as seen from the host.
	Pid() int
	// ProxyListener is the proxy's listening socket created inside the sandbox's own network
	// (linux, allowlist mode). Nil when the proxy listens on the host's loopback.
	ProxyListener() net.Listener
	// Kill ends every process behind the wall: the runner and all it started.
	Kill() error
	// Wait waits for the runner to exit and releases its resources.
	Wait() error
	// Active lists the parts of the wall in force ("namespaces", "landlock ABI 6", ...).
	Active() []string
}

// Stopper is a Process whose runner, once the caller closes its connection, ends what its
// commands started itself (SIGTERM to their process groups, a second for their traps,
// SIGKILL; runner.Server) and then exits, and whose wall would not end those otherwise
// (Seatbelt and direct: no process namespace). Stop, called after the connection is closed,
// waits for the runner up to StopWait, then kills what is left as Kill does. A Process
// that is not one is killed at once: its wall ends everything with the runner.
type Stopper interface {
	Stop() error
}

// StopWait bounds a Stopper's wait for its runner: the runner gives its commands a second
// between SIGTERM and SIGKILL, and more would keep a person waiting on End.
const StopWait = 1500 * time.Millisecond

// StopAfter is a Stopper's Stop: it waits until done is closed (the runner exited) or
// StopWait has passed, then calls kill for whatever is left.
func StopAfter(done <-chan struct{}, kill func() error) error {
	t := time.NewTimer(StopWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return kill()
}

// LinkRefuser is a Provider whose wall may refuse every hard link and clone: Seatbelt, on a
// Mac where the link probe has not proved which ends of one it checks. The session then makes
// npm's links copies and says, after a command that failed on one, why.
type LinkRefuser interface {
	// RefusesLinks says whether the walls Start builds now refuse every link and clone.
	RefusesLinks() bool
}

// Forwarder is a Process whose wall holds listeners, inside the sandbox's own network, for
// the policy's forwarded host ports (linux, allowlist mode). The caller relays them.
type Forwarder interface {
	// ForwardListeners returns the listener of each forwarded port, and for each port that
	// could not be had inside, why. The listeners are the caller's to close.
	ForwardListeners() (map[int]net.Listener, map[int]string)
	// ForwardListen makes a listener inside for a port allowed after the wall was built;
	// one a server inside already listens on fails with EADDRINUSE.
	ForwardListen(port int) (net.Listener, error)
}

// Publisher is a Process whose sandbox has a network of its own, with a loopback its servers
// listen on that nothing outside reaches: the core can see where they listen and carry a
// connection from this machine's loopback to one of them (a published port).
type Publisher interface {
	// OwnNetwork says the sandbox has a network of its own; without one (a network shared
	// with this machine) its servers are on this machine's loopback already.
	OwnNetwork() bool
	// Listening are the addresses TCP servers listen at in the sandbox's network now.
	Listening() ([]netip.AddrPort, error)
	// DialInside connects to to, an address of the sandbox's own loopback, from inside.
	DialInside(ctx context.Context, to netip.AddrPort) (net.Conn, error)
}

// EgressCounter is a Process whose core can count, from outside, the connections a command
// tried to make to an address its sandbox has no route to: programs that ignored the proxy.
type EgressCounter interface {
	// NoRoute is the number of such attempts since the sandbox started.
	NoRoute() (uint64, error)
}

// LoopbackCounter is a Process whose sandbox has a loopback of its own: its core can count,
// from outside, the connections programs inside tried on that loopback that nothing there
// answered (a program that expected the host's own services at 127.0.0.1).
type LoopbackCounter interface {
	// RefusedLoopback is the number of such attempts since the sandbox started.
	RefusedLoopback() (uint64, error)
}

// Abandoner is a Process that can be killed for a caller that will not wait for it (a
// process about to exit): Abandon kills it as Kill does and lets go of what the caller held
// only to make Wait quick, so that the kernel finishes the teardown off the caller's path.
type Abandoner interface {
	Abandon() error
}

// DenialReporter is a Provider whose wall reports what it refused each command (Seatbelt,
// through the unified log). The session asks it for each command's report, so that the
// session never needs to know how a wall reports.
type DenialReporter interface {
	// FollowDenials opens the report of one command of the session whose runner is proc
	// and whose profile tags its denials with marker: start the command after it returns.
	// An error says the command's denials cannot be reported, and why, in a sentence a
	// person reads ("Seatbelt's denials are not reported for this run: ...").
	FollowDenials(ctx context.Context, marker string, proc Process) (DenialReport, error)
	// StopFollowing ends what following keeps running (a log stream); a later FollowDenials
	// starts it again. A process that is about to exit calls it, so that nothing it started
	// outlives it.
	StopFollowing()
}

// DenialReport is one command's report of what its wall refused, open while it runs.
type DenialReport interface {
	// Close ends the report once the command has ended, and says what it comes to.
	Close(run DenialRun) Denials
}

// DenialRun is what a command's report depends on besides its denials.
type DenialRun struct {
	// UserHome is the person's real home folder.
	UserHome string
	// Failed says the command exited non-zero, timed out or did not finish.
	Failed bool
	// LocalServers says the session's local-servers switch is on.
	LocalServers bool
}

// Denials are what a command's report comes to.
type Denials struct {
	// Text is appended to the command's error output; empty when there is nothing to say.
	Text string
	// Listed is every denial as "OPERATION TARGET (PROCESS)", for the result.
	Listed []string
	// Egress are the direct connections around the proxy, once per host and port.
	Egress []Egress
	// Violations are every denial as JSON lines, for the session's violations file.
	Violations []byte
}

// Egress is a direct connection the wall refused, reported like a host the proxy refused.
type Egress struct {
	Host   string // the address connected to, or "*" when only the port is known
	Port   int
	Reason string
}

// Relayer is a Process whose sandbox has a network of its own that sends every TCP
// connection out (but to its own loopback) to a relay the caller serves, and DNS to a stub
// the caller answers (linux, allowlist and open mode, where the kernel has nf_tables). A
// program that ignores the proxy variables is then decided as a proxy's client is.
type Relayer interface {
	// RelayListeners hands over, once, the relay's listener (connections keep their
	// original destination) and the stub's UDP socket; both nil where there is no relay.
	// They are the caller's to close.
	RelayListeners() (net.Listener, net.PacketConn)
}
