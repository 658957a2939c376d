// Command openworker-shell is the shell an agent host's own shell tool runs its commands
// with under OpenWorker: openworker agent points the host at it (Claude Code's shell prefix,
// or a bash of its own first on the host's PATH), and each command goes into the host's
// session, behind the wall, as the host's own shell would run it. Nothing runs outside:
// without a session it refuses, and says why. See core/agentshell.
package main

import (
	"os"

	"github.com/openworker/openworker/core/agentshell"
)

func main() {
	os.Exit(agentshell.Main(agentshell.Options{
		Args: os.Args, Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getwd: os.Getwd, Pid: os.Getpid(),
	}))
}
