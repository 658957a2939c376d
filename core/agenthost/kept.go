package agenthost

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openworker/openworker/core/agentshell"
)

// Installed are the programs a configuration a person keeps names, by their installed paths.
type Installed struct {
	Shell string // openworker-shell
	MCP   string // openworker-mcp (or openworker), started with mcp --agent-host
	Host  string // the host's own program, resolved (Codex's executor is the same program)
	// ClaudeTmp is the folder Claude Code writes its commands' output to, which sessions
	// read: one per user, which the MCP server makes this user's alone.
	ClaudeTmp string
}

// Kept is h's routing as settings a person keeps, for a host started by hand or from an
// editor: what to put where, and what each part does.
func (h *Host) Kept(in Installed) (string, error) {
	switch h {
	case claude:
		return keptClaude(in)
	case codex:
		return keptCodex(in)
	case gemini:
		return keptGemini(in)
	}
	return "", fmt.Errorf("%s has no configuration to keep", h.Title)
}

func keptClaude(in Installed) (string, error) {
	settings := map[string]any{
		"env":         map[string]string{"CLAUDE_CODE_SHELL_PREFIX": in.Shell, "CLAUDE_CODE_TMPDIR": in.ClaudeTmp},
		"permissions": map[string]any{"deny": claudeDenied},
	}
	sj, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Claude Code behind OpenWorker's wall, kept in its settings (openworker agent claude
# gives it the same for one run, and more: see the last part).

# 1. In ~/.claude/settings.json, merged with what is there:
%s
#    CLAUDE_CODE_SHELL_PREFIX: every shell command Claude Code runs (Bash, in the foreground
#      and the background, hooks, the ! mode) goes to openworker-shell, which runs it in the
#      session of this Claude Code, behind the wall, and refuses it when there is none.
#    CLAUDE_CODE_TMPDIR: where Claude Code writes its commands' output; sessions read it, so
#      a command can read a background command's output.
#    permissions.deny: Claude Code's own file tools and web fetch, which read, write and fetch
#      from its own process, outside the wall; OpenWorker's MCP server gives their like.

# 2. OpenWorker's MCP server, which starts the session (on the folder Claude Code starts in)
#    and gives run_command, read_file, write_file, list_directory, request_site, web_fetch
#    and session_info:
claude mcp add --scope user openworker -- %s mcp --agent-host

# What openworker agent claude does besides: it reads only your own settings
# (--setting-sources user), takes Claude Code's tools from a list (--tools), so a tool a later
# version adds stays off, and starts no other MCP server. Kept settings cannot say the same:
# a project's .claude/settings.json and .mcp.json are read too, which OpenWorker keeps
# read-only inside its sessions, and other MCP servers start through the shell prefix,
# inside the wall.
`, sj, shellQuote(in.MCP))
	return b.String(), nil
}

func keptCodex(in Installed) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, `# Codex behind OpenWorker's wall, kept in its settings (openworker agent codex gives it the
# same for one run).

# 1. ~/.codex/environments.toml: Codex runs every tool that touches the machine (its shell,
#    apply_patch, view_image) on this executor, which openworker-shell starts in the session
#    of this Codex, behind the wall; there is no local executor, so with no session its tools
#    fail instead of running outside.
default = "openworker"
include_local = false

[[environments]]
id = "openworker"
program = %s
args = [%s, %s]
# A session's start (its wall proved from inside) and the executor's take a few seconds.
initialize_timeout_sec = 60

# 2. In ~/.codex/config.toml:
[mcp_servers.openworker]
# OpenWorker's MCP server, which starts the session (on the folder Codex starts in) and gives
# request_site, web_fetch and the other tools.
command = %s
args = ["mcp", "--agent-host"]
default_tools_approval_mode = "approve"

[shell_environment_policy]
# The executor's variables, which are the session's (its proxy among them), not Codex's.
inherit = "all"

# 3. Start Codex with --dangerously-bypass-approvals-and-sandbox (the wall is the sandbox:
#    Codex's own would run inside it).
`, strconv.Quote(in.Shell), strconv.Quote(agentshell.ExecutorFlag), strconv.Quote(in.Host), strconv.Quote(in.MCP))
	return b.String(), nil
}

// GeminiBin is the folder a kept gemini-cli finds its shell in, under the home folder: a
// link named bash to openworker-shell, first on gemini-cli's PATH (and on no other
// program's).
const GeminiBin = ".openworker-gemini"

func keptGemini(in Installed) (string, error) {
	settings := map[string]any{
		"mcpServers": map[string]any{geminiMCPName: map[string]any{"command": in.MCP, "args": []string{"mcp", "--agent-host"}, "trust": true}},
		"tools":      map[string]any{"exclude": geminiDenied, "shell": map[string]any{"enableInteractiveShell": false}},
		"security":   map[string]any{"toolSandboxing": false},
		"advanced":   map[string]any{"ignoreLocalEnv": true},
	}
	sj, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# gemini-cli behind OpenWorker's wall, kept in its settings (openworker agent gemini gives it
# the same for one run, and more: see the last part).

# 1. In ~/.gemini/settings.json, merged with what is there:
%s
#    mcpServers.openworker: OpenWorker's MCP server, which starts the session (on the folder
#      gemini-cli starts in) and gives run_command, read_file, write_file, list_directory,
#      request_site, web_fetch and session_info; gemini-cli starts it itself, outside, as it must.
#    tools.exclude: gemini-cli's own file and web tools, which read, write and fetch from its
#      own process, outside the wall (the policy below says the same, at a tier no project's
#      settings outrank).
#    enableInteractiveShell, toolSandboxing: commands run without a terminal of their own, and
#      without gemini-cli's own sandbox, which would run inside the wall.
#    ignoreLocalEnv: a project's .env does not set gemini-cli's own variables.

# 2. In ~/.gemini/policies/openworker.toml (gemini-cli reads every policy file there):
%s
# 3. gemini-cli runs every shell command (and its hooks) with the first bash on its PATH:
#    a folder holding openworker-shell by that name, first on gemini-cli's PATH alone, sends
#    them into the session of this gemini-cli, behind the wall, and refuses them when there is
#    none. In your shell's startup file:
mkdir -p ~/%[3]s && ln -sf %[4]s ~/%[3]s/bash
alias gemini='PATH="$HOME/%[3]s:$PATH" gemini'

# What openworker agent gemini does besides: it checks the project's .gemini/settings.json
# and .gemini/.env before gemini-cli starts, and refuses a start where they would run programs
# outside, read files outside or undo the routing; it gives the policy as --admin-policy, which
# no setting outranks; and it starts no MCP server but OpenWorker's. Kept settings cannot say
# all that: gemini-cli then reads a project's .gemini as it is (OpenWorker keeps it read-only
# inside its sessions), and starts your other MCP servers and extensions outside the wall.
`, sj, geminiPolicy(), GeminiBin, shellQuote(in.Shell))
	return b.String(), nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
