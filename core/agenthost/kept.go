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

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
