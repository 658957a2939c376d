package main

// agentCommand is in every build: the shipped openworker (-tags mcpapart) hands it to the
// MCP server's program beside it, which serves the host its tools (cmd_agent_apart.go); a
// build without the tag runs it itself (cmd_agent_host.go).
var agentCommand = command{
	name:     "agent",
	synopsis: "agent [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider auto|seatbelt|linux|direct] [--git-metadata protected|writable] [--local-servers] [--print-config] HOST [HOST ARG…]",
	about: `Starts the agent host HOST (claude, codex or gemini: a program on PATH, or its path) with a
session on the current folder (or the --rw and --ro folders), and routes the host's own tools
through it: every command its shell tool runs (in the foreground or the background) runs
behind the wall, in the session; its own file tools, which read and write from the host's
process, are switched off, and OpenWorker's MCP server gives it run_command, read_file,
write_file, list_directory, request_site, web_fetch and session_info in the same session. The
host itself, its model keys and its agent loop stay outside, as they are.

A site the session's proxy refused is named in the tool result the model reads, which may
ask the person for it with request_site; the person's answer (a card) opens it for the next
command. When the session cannot start, the host still starts, and its shell refuses every
command with the reason: nothing runs outside. The session ends when the host exits, and
everything its commands left running ends with it. Nothing is written into the project or
into the host's own settings. A host that would also read settings of the project's that run
programs outside or undo the routing (gemini-cli's .gemini) is not started, and the reason
says which.

From HOST on, every word is the host's. --print-config HOST prints the same routing as
settings to keep, for a host started by hand or from an editor.`,
	example:      "openworker agent claude\nopenworker agent --allow registry.npmjs.org codex exec 'run the tests'\nopenworker agent gemini -p 'fix the build'\nopenworker agent --print-config claude",
	minArgs:      1,
	maxArgs:      -1,
	needs:        "the agent host to start (claude, codex or gemini)",
	commandAfter: true,
}
