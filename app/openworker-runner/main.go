// Command openworker-runner is the small helper that runs inside the wall: the tool runner
// that carries out a session's commands and file tools, ssh's ProxyCommand (`__connect`)
// and, on Linux, the wall builder, which serves the runner itself; and, outside every wall,
// what prints the person's login shell's environment (`__print-env`). It is built without cgo
// and links neither the CLI's packages (the MCP SDK, JSON schemas, YAML, HTML) nor, on a
// Mac, AppKit or darwinkit, so that every start inside the wall costs what a small static
// program costs, reads no bundle and makes no denial of its own. The CLI, the daemon and the
// app find it beside themselves (Contents/Helpers in the bundle); without it, on Linux, the
// openworker binary builds the wall itself.
package main

import (
	"fmt"
	"os"

	"github.com/openworker/openworker/core/credentials/connect"
	"github.com/openworker/openworker/core/runner"
)

func main() {
	// The Linux wall builder is started from this binary; it must take over before
	// anything else.
	maybeBuildWall()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "openworker-runner: this helper is started by openworker inside a session's wall, not by hand")
		os.Exit(2)
	}
	switch os.Args[1] {
	case runner.Arg:
		if err := runner.Main(); err != nil {
			fmt.Fprintln(os.Stderr, "openworker runner:", err)
			os.Exit(2)
		}
	case connect.Arg:
		os.Exit(connect.Connect(os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	case runner.EnvArg:
		if err := runner.PrintEnv(os.Stdout); err != nil {
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "openworker-runner: unknown argument %q; this helper is started by openworker inside a session's wall\n", os.Args[1])
		os.Exit(2)
	}
}
