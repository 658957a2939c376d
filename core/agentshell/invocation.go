package agentshell

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// ProgramName is the agent hosts' shell's program name.
const ProgramName = "openworker-shell"

// Invocation is what a host asked its shell to run.
type Invocation struct {
	// Shell runs Command inside: the host's shell's dialect (bash, zsh or sh).
	Shell   string
	Command string
	// Args are $0 and the positional parameters that follow the command (sh -c CMD NAME…).
	Args []string
	// Outside is OpenWorker's own MCP server, which the host started through its shell
	// prefix (see ownMCPServer): it runs outside, in the shell's place.
	Outside []string
	// CwdFile is where the host reads back the folder the command ended in (Claude Code's
	// `pwd -P >| FILE`), outside; "" when the host does not ask. The command writes it
	// inside, where the host cannot read it, so the shell carries it out (see trailer).
	CwdFile string
	// PidsFile is where the host reads back the command's own background jobs (gemini-cli's
	// bgpids file), outside; the shell carries them out as it does the folder.
	PidsFile string
}

// ErrNotAShellCall refuses a start that no agent host makes.
var ErrNotAShellCall = errors.New(ProgramName + " runs an agent host's shell commands behind OpenWorker's wall; " +
	"the host starts it (openworker agent HOST, or the settings openworker agent --print-config HOST prints)")

// Parse reads how the shell was started. As a command prefix (CLAUDE_CODE_SHELL_PREFIX) it
// gets the host's whole shell script as its one argument; as the shell itself (a host that
// runs `bash -c CMD` and finds this program as bash, or one whose shell setting names it) it
// gets the shell's options. shellEnv is the host's $SHELL, whose dialect a prefixed script is
// written in; tmpDir is the host's temporary folder, where it makes the files a script writes
// for it to read back.
func Parse(argv0 string, args []string, shellEnv, tmpDir, self string) (Invocation, error) {
	name := filepath.Base(argv0)
	if name == ProgramName && len(args) == 1 && !strings.HasPrefix(args[0], "-") {
		if argv := ownMCPServer(args[0], self); argv != nil {
			return Invocation{Outside: argv}, nil
		}
		inv := Invocation{Shell: dialect(shellEnv), Command: args[0]}
		inv.Command, inv.CwdFile = takeCwdFile(inv.Command, tmpDir)
		return inv, nil
	}
	shell := dialect(name)
	if name == ProgramName {
		shell = dialect(shellEnv)
	}
	// sh [-l] [-i] [-e…] -c CMD [NAME [ARG…]]: the options a host gives, alone or joined
	// (-lc), up to the command.
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--login" || a == "--noprofile" || a == "--norc":
			continue
		case strings.HasPrefix(a, "-") && len(a) > 1 && !strings.HasPrefix(a, "--"):
			flags := a[1:]
			if !strings.Contains(flags, "c") {
				if strings.Trim(flags, "lieuxo") != "" {
					return Invocation{}, fmt.Errorf("%s: option %s is not one an agent host gives its shell; give a command with -c", ProgramName, a)
				}
				continue
			}
			if i+1 >= len(args) {
				return Invocation{}, fmt.Errorf("%s: -c needs a command", ProgramName)
			}
			inv := Invocation{Shell: shell, Command: args[i+1], Args: args[i+2:]}
			if shell == "bash" {
				inv.Command, inv.PidsFile = takePidsFile(inv.Command, tmpDir)
			}
			return inv, nil
		default:
			return Invocation{}, ErrNotAShellCall
		}
	}
	return Invocation{}, ErrNotAShellCall
}

// dialect is the shell that runs a command written for name: bash and zsh are theirs, and
// anything else is taken for bash, the shell hosts write for.
func dialect(name string) string {
	switch filepath.Base(name) {
	case "zsh":
		return "zsh"
	case "sh", "dash":
		return "sh"
	}
	return "bash"
}

// cwdTail is the end of Claude Code's shell script: the folder the command ended in, written
// for the host to read back (`pwd -P >| /TMP/claude-1a2b-cwd`, the path quoted by its shell
// quoting when it needs it).
var cwdTail = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(` && pwd -P >\| ('[^']*'|[^\s'"\\;&|<>$` + "`" + `]+)$`)
})

// takeCwdFile finds where the script writes its folder, when that is a file of the host's
// own in its temporary folder, and returns the script writing it as a marker on its error
// output instead (see cwdMarker).
func takeCwdFile(script, tmpDir string) (string, string) {
	m := cwdTail().FindStringSubmatchIndex(script)
	if m == nil || tmpDir == "" {
		return script, ""
	}
	path := script[m[2]:m[3]]
	if strings.HasPrefix(path, "'") {
		path = path[1 : len(path)-1]
	}
	if filepath.Dir(path) != filepath.Clean(tmpDir) || !cwdName().MatchString(filepath.Base(path)) {
		return script, ""
	}
	return script[:m[0]] + " && " + cwdMarkerCommand, path
}

var cwdName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^claude-[0-9a-f]{1,8}-cwd$`) })

// pidsHead is the start of gemini-cli's shell script: the file its background jobs' numbers
// go to when the command's subshell exits (`_bgpids_file=/TMP/gemini-shell-Ab12Cd/bgpids.tmp`,
// the path quoted by its shell quoting when it needs it), and the trap that writes it.
var pidsHead = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(shopt -u [a-z ]+; )?_bgpids_file=('[^'\\]*'|[A-Za-z0-9/._+-]+)\n\(\n  trap 'jobs -p > "\$_bgpids_file"' EXIT\n`)
})

var pidsName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^gemini-shell-[A-Za-z0-9]{6}$`) })

// takePidsFile finds where gemini-cli's script writes its background jobs, when that is a
// file of gemini-cli's own in its temporary folder, and returns the script printing them as
// a marker on its error output instead (see trailer).
func takePidsFile(script, tmpDir string) (string, string) {
	m := pidsHead().FindStringSubmatchIndex(script)
	if m == nil || tmpDir == "" {
		return script, ""
	}
	path := script[m[4]:m[5]]
	if strings.HasPrefix(path, "'") {
		path = path[1 : len(path)-1]
	}
	dir := filepath.Dir(path)
	if filepath.Base(path) != "bgpids.tmp" || filepath.Dir(dir) != filepath.Clean(tmpDir) || !pidsName().MatchString(filepath.Base(dir)) {
		return script, ""
	}
	trap := strings.Index(script[:m[1]], "  trap ")
	return script[:trap] + "  trap '" + pidsMarkerCommand + "' EXIT\n" + script[m[1]:], path
}
