// Package agentshell is the shell an agent host's own shell tool runs its commands with
// under OpenWorker (the openworker-shell program): each command goes into the session of the
// host, behind the wall, as a command beside the session's shell, and nothing runs outside.
// It finds the session, sends the command to the daemon, passes the output and the exit
// status on as the host's own shell would, and turns the host's interrupts into the
// command's.
//
// It is small on purpose: every shell call of an agent host starts it, so it links no HTTP
// stack, no wire types of the API and nothing that decides or enforces — only a client for
// the few calls it makes. What it refuses, it refuses: with no session it runs nothing, and
// says why.
package agentshell
