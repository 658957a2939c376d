// Package agenthost says how each agent host (Claude Code, Codex, gemini-cli) is started so
// that its own shell and file tools go through an OpenWorker session: the arguments,
// variables and files of the run's that point its shell at openworker-shell, replace or
// switch off the tools that would read, write or fetch from the host's own process, and add
// OpenWorker's MCP server. It decides from what it is given and what it reads (the person's
// and the project's settings of the host) and writes nothing: openworker agent writes the
// run's files and starts the host, and --print-config prints the same as settings a person
// keeps.
//
// It is not where a host's commands are carried out (core/agentshell, the session) nor
// where the wall is (core/session and the providers).
package agenthost

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/agentshell"
)

// Host is an agent host OpenWorker knows how to route.
type Host struct {
	// Name is the host's program name, as a person types it: claude, codex, gemini.
	Name string
	// Title is how the host is called in messages.
	Title string
	// launch returns the host's arguments (before the person's) and variables for a run.
	launch func(r Routing, args []string) (Launch, error)
	// owned are the host's options whose value OpenWorker sets for the routing: given by the
	// person too, they would undo it, so they are refused.
	owned []string
	// check refuses other arguments that would take the host's tools out of the routing.
	check func(args []string) error
	// preflight refuses a start where the host would read settings that undo the routing
	// (a project's, this machine's), from the folder it starts in and the person's home.
	preflight func(dir, home string) error
}

// SettingsError is a start refused for settings the host would read (the person's, the
// project's, this machine's), not for the person's arguments.
type SettingsError struct{ msg string }

func (e *SettingsError) Error() string { return e.msg }

func settingsErrorf(format string, a ...any) error {
	return &SettingsError{msg: fmt.Sprintf(format, a...)}
}

// Routing is where a run's pieces are.
type Routing struct {
	// Shell is openworker-shell's absolute path: every shell command the host runs goes to it.
	Shell string
	// PathDir is a folder of links to Shell named as the shells a host runs by name (bash,
	// sh), put first on the host's PATH for hosts that find their shell there.
	PathDir string
	// Tmp is the host's own temporary folder: the host writes its commands' output files
	// there, and the session has it read-only at the same path, so that a command can read
	// them.
	Tmp string
	// MCP is OpenWorker's MCP server for the run (HTTP on loopback, with a token).
	MCP MCPServer
	// Executor is the WebSocket where a host that runs its tools on a remote executor
	// (Codex) finds the one openworker agent starts in the session for it.
	Executor string
	// Socket and Session are the daemon's socket and the run's session, for the shell.
	Socket, Session string
	// Refused says why the run has no session: the shell refuses every command with it.
	Refused string
	// HostHome is an empty folder of the run's, for a host whose settings can be given for
	// one run only by a home folder of its own (gemini-cli's GEMINI_CLI_HOME).
	HostHome string
	// Home is the person's home folder, whose settings and logins of the host's the run
	// takes along; Dir is the folder the host starts in, the project's settings' place.
	Home, Dir string
}

// MCPServer is an MCP server on loopback that wants Token as a bearer token.
type MCPServer struct {
	URL, Token string
}

// Launch is how a host is started.
type Launch struct {
	Args []string // before the person's arguments
	Env  []string // NAME=VALUE, on top of the person's environment
	// PathFirst are folders put first on the host's PATH.
	PathFirst []string
	// Files are written before the host starts, in Routing.HostHome, in this order.
	Files []File
}

// File is a file of a run's: Data written at Path (its folders made, the person's alone),
// or, with Link set, a symbolic link there to Link.
type File struct {
	Path string
	Data []byte
	Link string
}

// Hosts are the hosts OpenWorker routes, by name.
var Hosts = []*Host{claude, codex, gemini}

// Find returns the host whose program program is (a name or a path; .exe and a version
// suffix are ignored), or an error that lists the hosts there are.
func Find(program string) (*Host, error) {
	base := strings.TrimSuffix(filepath.Base(program), ".exe")
	for _, h := range Hosts {
		if base == h.Name {
			return h, nil
		}
	}
	var names []string
	for _, h := range Hosts {
		names = append(names, h.Name+" ("+h.Title+")")
	}
	why := ""
	if base == "cursor-agent" {
		why = " cursor-agent is not among them: its settings cannot be given for one run without writing your own."
	}
	return nil, fmt.Errorf("%s is not an agent host OpenWorker knows how to put behind the wall; it knows %s.%s "+
		"For another host, add OpenWorker's MCP server (openworker mcp) to it and turn off its own shell and file tools",
		program, strings.Join(names, ", "), why)
}

// Check refuses a start of h with the person's arguments args, in dir with the person's home
// home, that the routing could not hold: before a session is started for it. A
// *SettingsError is for settings h would read; any other, for args.
func (h *Host) Check(args []string, dir, home string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(h.owned, name) {
			return fmt.Errorf("%s %s: openworker agent sets it itself, to route %s's tools through the sandbox; leave it out", h.Name, name, h.Title)
		}
		if a == "--" {
			break
		}
	}
	if h.check != nil {
		if err := h.check(args); err != nil {
			return err
		}
	}
	if h.preflight != nil {
		return h.preflight(dir, home)
	}
	return nil
}

// Launch returns how h is started for a run routed as r, with the person's arguments args,
// which may not set what the routing sets (Check is made again).
func (h *Host) Launch(r Routing, args []string) (Launch, error) {
	if err := h.Check(args, r.Dir, r.Home); err != nil {
		return Launch{}, err
	}
	if r.Shell == "" || !filepath.IsAbs(r.Shell) {
		return Launch{}, errors.New("the agent hosts' shell (openworker-shell) is not known by an absolute path")
	}
	l, err := h.launch(r, args)
	if err != nil {
		return Launch{}, err
	}
	l.Env = append(l.Env, shellVars(r)...)
	return l, nil
}

// shellVars are what openworker-shell reads to find the run's session.
func shellVars(r Routing) []string {
	var env []string
	if r.Refused != "" {
		env = append(env, agentshell.EnvRefused+"="+r.Refused)
	}
	if r.Socket != "" {
		env = append(env, agentshell.EnvSocket+"="+r.Socket)
	}
	if r.Session != "" {
		env = append(env, agentshell.EnvSession+"="+r.Session)
	}
	return env
}
