package main

// mcpCommand is in every build: the shipped openworker (-tags mcpapart) lists it and hands it
// to the server beside it (cmd_mcp_apart.go); a build without the tag serves it itself
// (cmd_mcp_server.go). The tools it names are the server's (TestMCPToolNamesInHelp).
var mcpCommand = command{
	name:     "mcp",
	synopsis: "mcp [--rw DIR]… [--ro DIR]… [--no-cwd] [--allow HOST[:PORT]]… [--network allowlist|open|none] [--provider auto|seatbelt|linux|direct] [--local-servers] [--publish PORT]… [--ask-wait D] [--no-forms]",
	about: `Speaks MCP over standard input and output: an agent's shell and file tools
(run_command, read_file, write_file, list_directory, request_site, web_fetch, session_info)
in one session behind the wall. Without --rw the current folder is the writable folder; with
--rw, exactly the folders named are (add --rw . for the current one too). Like run, it uses
this OS's sandbox unless --provider direct.

The session lives in the running app or daemon, so its cards show there; when none runs it
starts a daemon (openworker serve --exit-when-idle) that ends once its last session has
ended. So one agent's server never ends another agent's session. The session ends when the
client disconnects, or when this server dies however it dies.

A site the agent asks for is put to the person on a card where someone watches cards (the
app, openworker cards --watch); otherwise in the agent's own client as a form, when the
client can show one; otherwise the card waits for the person. A form dismissed without a
choice (cancel) leaves the card waiting; Decline denies, as Deny does. --no-forms never uses
the client's form: use it for headless hosts, which cancel every form (claude -p) or decline
it (codex exec, which so denies every site). An ask waits up to --ask-wait for an
answer, then tells the agent "no answer yet"; keep it under the host's tool-call timeout.

What the agent reads of a blocked site says only that it may ask with request_site: the ways
a person opens a site are never in text a model reads. A server that cannot start still
answers the handshake, and every call says why. Standard output carries protocol messages
only; logs go to standard error.`,
	example: "claude mcp add --transport stdio openworker -- openworker mcp --rw /abs/path/to/project",
	maxArgs: 0,
}
