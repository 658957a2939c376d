package agenthost

import (
	"encoding/json"
	"strings"
)

// Claude Code runs every shell command (its Bash tool, in the foreground and the background,
// hooks, the ! mode) as `$SHELL -c 'PREFIX' 'SCRIPT'` when CLAUDE_CODE_SHELL_PREFIX is set:
// the prefix is openworker-shell, which sends the script into the session. Its file tools
// (Read, Write, Edit, NotebookEdit) and WebFetch run in its own process, outside the wall,
// so they are switched off, and OpenWorker's MCP server gives their like behind the wall.
var claude = &Host{
	Name:   "claude",
	Title:  "Claude Code",
	launch: launchClaude,
	owned: []string{"--tools", "--disallowedTools", "--disallowed-tools", "--settings", "--setting-sources",
		"--mcp-config", "--strict-mcp-config"},
}

// claudeTools are the tools Claude Code keeps: its shell, subagents (which get the same
// tools), skills, the tool search that loads deferred tools, stopping its own background
// commands, and tools that touch nothing on this machine (web search runs at the model's
// provider). Every other tool, and any a later version adds, stays off: Read, Write, Edit
// and NotebookEdit read and write from Claude Code's own process, WebFetch fetches from it,
// Monitor opens WebSockets from it, worktrees run git outside, SendMessage and ListAgents
// talk to other Claude sessions on this machine, Workflow runs model-written scripts in it.
var claudeTools = []string{"Bash", "Agent", "Skill", "ToolSearch", "TaskStop", "WebSearch", "AskUserQuestion", "ScheduleWakeup", "ReportFindings", "TodoWrite"}

// claudeDenied are the same tools named again as denied: a second layer, should a version
// read --tools differently.
var claudeDenied = []string{"Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep", "WebFetch", "Monitor",
	"EnterWorktree", "ExitWorktree", "SendMessage", "ListAgents", "Workflow", "DesignSync", "CronCreate", "CronDelete", "CronList", "LSP"}

func launchClaude(r Routing, _ []string) (Launch, error) {
	env := map[string]string{"CLAUDE_CODE_SHELL_PREFIX": r.Shell}
	if r.Tmp != "" {
		// Its commands' output files and the file a command's folder is read back from:
		// readable inside at the same path (the session has it read-only), so a command
		// can read a background command's output.
		env["CLAUDE_CODE_TMPDIR"] = r.Tmp
	}
	settings := map[string]any{
		// In the settings given on the command line, whose variables win over every
		// settings file's: a project's .claude/settings.json would otherwise name another
		// shell prefix (project settings are not read at all: see --setting-sources).
		"env":         env,
		"permissions": map[string]any{"deny": claudeDenied},
	}
	sj, err := json.Marshal(settings)
	if err != nil {
		return Launch{}, err
	}
	args := []string{
		// Only the person's own settings: a project's .claude/settings*.json, which a
		// command in the session can write, could otherwise add hooks, an apiKeyHelper or
		// MCP servers that run outside the wall, and Claude Code reads it again while it runs.
		"--setting-sources", "user",
		"--settings", string(sj),
		"--tools", strings.Join(claudeTools, ","),
		"--disallowedTools", strings.Join(claudeDenied, ","),
	}
	if r.MCP.URL != "" {
		mj, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"openworker": map[string]any{
			// Over HTTP, which Claude Code reaches itself: a server it started would be
			// started through the shell prefix, inside the wall.
			"type": "http", "url": r.MCP.URL, "headers": map[string]string{"Authorization": "Bearer " + r.MCP.Token},
		}}})
		if err != nil {
			return Launch{}, err
		}
		// Only OpenWorker's MCP server: a server of the project's .mcp.json or the
		// person's would be started through the shell prefix, inside the wall.
		args = append(args, "--strict-mcp-config", "--mcp-config", string(mj), "--allowedTools", "mcp__openworker")
	}
	var vars []string
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return Launch{Args: args, Env: vars}, nil
}
