// Command openworker runs an AI agent's shell commands and file tools behind a sandbox wall,
// with an allow-list egress proxy as its only door to the network. It is the CLI, the daemon
// (`serve`), and, with no arguments on macOS, the menu-bar app. It only parses and wires:
// everything that decides and enforces lives in core.
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"

	"github.com/openworker/openworker/core/agentshell"

	"github.com/openworker/openworker/core/credentials/connect"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
	"github.com/openworker/openworker/core/termtext"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `openworker — run an agent's commands behind a wall, with an allow list for the network

Usage:
  openworker run [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none]
                 [--provider auto|seatbelt|linux|direct] [--local-servers] [--publish PORT]…
                 [--timeout D] -- CMD [ARG…]
                                  run one command in a fresh sandbox; exits with its status
  openworker sandbox check [--json] [--report FILE]
                                  prove the sandbox works here: real programs behind the wall
  openworker sandbox profile [--rw DIR]… [--ro DIR]… [--network MODE]
                                  print the Seatbelt profile a session would get (any OS)
  openworker machine sandbox status
                                  the machine's provider, whether sessions can run, and why not
  openworker serve                run the daemon: the local API for sessions and watchers
  openworker mcp [--rw DIR]… [--ro DIR]… [--allow HOST[:PORT]]…
                                  an MCP server on stdio: an agent's shell and file tools behind the wall
  openworker agent [--rw DIR]… [--allow HOST[:PORT]]… HOST [HOST ARG…]
                                  start an agent host (claude, codex, gemini) with its own tools behind the wall
  openworker session start|exec|read|write|list|add-folder|end|ls …
                                  use sessions of a running daemon (see: openworker session help)
  openworker config path|check [FILE]|show
                                  where the settings live, check a file, show what is in force
  openworker cards [--watch] [--json]
                                  the site cards waiting for an answer
  openworker answer CARD once|session|always|deny
                                  answer a card; the running session gets it at once
  openworker request-site SESSION HOST[:PORT] --reason TEXT
                                  ask for a site for a session, on a card
  openworker access SESSION [--allow SITE]… [--revoke SITE]…
                                  a session's sites, and changes to them
  openworker sites list|tick|untick|add|remove …
                                  the "Choose sites…" list of the machine's settings
  openworker fetch SESSION URL    the coworker's web fetch, outside the sandbox, under its allow list
  openworker credentials list|add|add-path|enable|disable|remove …
                                  the logins shared with the sandbox on purpose
  openworker audit [--session ID] [--since WHEN] [--follow]
                                  show the audit trail
  openworker caches list|clear [--rw DIR]… [--all]
                                  the tools' caches kept for each project, and clearing them
  openworker version

Run "openworker COMMAND --help" (or "openworker help COMMAND") for a command's flags.

Example:
  openworker sandbox check
  openworker run --ro ../data -- make test
`

func main() {
	// The Linux wall builder re-executes this binary; it must take over before anything else.
	linux.MaybeRunInit()
	// Started by a link of its name (openworker agent without the program beside it), this
	// binary is the agent hosts' shell.
	if filepath.Base(os.Args[0]) == runner.ShellName {
		os.Exit(agentshell.Main(agentshell.Options{Args: os.Args, Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getwd: os.Getwd, Pid: os.Getpid()}))
	}
	// The SSH agent library logs each request it refuses to the standard logger; those
	// refusals are in the audit trail and the command's output already, and a line on the
	// terminal of openworker run would only repeat them. Nothing else here uses it.
	log.SetOutput(io.Discard)
	os.Exit(run(os.Args[1:]))
}

// exitError carries an exit status without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a mistake in how a command was called: it is said on one line, with where
// the command's usage is, and exits 2, as every usage error does.
type usageError struct {
	command string // "session exec", or "" for the top level
	msg     string
}

func (e usageError) Error() string {
	help := "openworker --help"
	if e.command != "" {
		help = "openworker " + e.command + " --help"
	}
	return e.msg + " (see " + help + ")"
}

// usagef is a usageError of command's.
func usagef(command, format string, a ...any) error {
	return usageError{command: command, msg: fmt.Sprintf(format, a...)}
}

// group is a command whose first argument is a subcommand (sandbox, session, config,
// machine): its usage lists them and ends with an example.
type group struct {
	name  string // "sandbox"
	usage string
	subs  string // "check or profile", for the errors
}

// help answers args that name no subcommand: help, --help or -h print the usage (exit 0);
// nothing at all is a usage error. ok says args[0] is a subcommand to look up.
func (g group) help(args []string) (ok bool, err error) {
	if len(args) == 0 {
		return false, usagef(g.name, "%s needs a command: %s", g.name, g.subs)
	}
	switch args[0] {
	case "help", "--help", "-h":
		fmt.Print(g.usage)
		return false, nil
	}
	return true, nil
}

// unknown is the usage error for a subcommand g does not have.
func (g group) unknown(sub string) error {
	return usagef(g.name, "unknown %s command %q; use %s", g.name, sub, g.subs)
}

var versionCommand = command{
	name: "version", synopsis: "version",
	about:   "Prints OpenWorker's version, the OS and architecture it was built for, and the Go it was built with.",
	example: "openworker version",
}

func run(args []string) int {
	err := dispatch(args)
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// An error may carry what a command or an agent wrote (a path, a reason): shown escaped.
	fmt.Fprintln(os.Stderr, "openworker:", termtext.Lines(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func dispatch(args []string) error {
	if len(args) == 0 {
		return noArgs()
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case session.RunnerArg:
		if err := runner.Main(); err != nil {
			fmt.Fprintln(os.Stderr, "openworker runner:", err)
			return exitError{2}
		}
		return nil
	case "run":
		return cmdRun(rest)
	case "sandbox":
		return cmdSandbox(rest)
	case "machine":
		return cmdMachine(rest)
	case "serve":
		return cmdServe(rest)
	case "mcp":
		return cmdMCP(rest)
	case "agent":
		return cmdAgent(rest)
	case "session":
		return cmdSession(rest)
	case "config":
		return cmdConfig(rest)
	case "audit":
		return cmdAudit(rest)
	case "cards":
		return cmdCards(rest)
	case "answer":
		return cmdAnswer(rest)
	case "request-site":
		return cmdRequestSite(rest)
	case "access":
		return cmdAccess(rest)
	case "sites":
		return cmdSites(rest)
	case "fetch":
		return cmdFetch(rest)
	case "credentials":
		return cmdCredentials(rest)
	case "caches":
		return cmdCaches(rest)
	case connect.Arg:
		return cmdConnect(rest)
	case runner.EnvArg:
		// The login shell's environment, when no helper lies beside this binary.
		if err := runner.PrintEnv(os.Stdout); err != nil {
			return exitError{1}
		}
		return nil
	case "version", "--version":
		if _, _, err := parse(newFlags(versionCommand), versionCommand, rest); err != nil {
			return err
		}
		fmt.Printf("openworker %s (%s/%s, %s)\n", version, runtime.GOOS, runtime.GOARCH, runtime.Version())
		return nil
	case "help", "-h", "--help":
		// help COMMAND is COMMAND --help.
		if len(rest) > 0 && cmd == "help" && rest[0] != "help" {
			return dispatch(append(rest, "--help"))
		}
		fmt.Print(usage)
		return nil
	}
	return usagef("", "unknown command %q", cmd)
}
