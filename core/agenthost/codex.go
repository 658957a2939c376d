package agenthost

import (
	"errors"
	"fmt"
	"strings"
)

// Codex runs every tool that touches the machine (exec_command and write_stdin, apply_patch,
// view_image, and its reads of AGENTS.md) on an executor, which CODEX_EXEC_SERVER_URL names
// instead of its own process: openworker agent serves that WebSocket and starts the executor
// (codex exec-server) inside the session for it. With the variable set Codex has no local
// executor at all: when ours cannot be reached, its tools fail instead of running outside.
var codex = &Host{
	Name:   "codex",
	Title:  "Codex CLI",
	launch: launchCodex,
	owned: []string{"--sandbox", "-s", "--dangerously-bypass-approvals-and-sandbox", "--yolo", "--full-auto",
		"--add-dir", "--dangerously-bypass-hook-trust"},
	check: func(args []string) error { _, err := checkCodexArgs(args); return err },
}

// codexSubcommands are the subcommands that run an agent: the interactive one (none), exec,
// review, and the ones that take up an earlier session. The others (login, mcp, apply,
// sandbox, …) run no agent, and sandbox runs a command outside: they are run as codex itself.
var codexSubcommands = map[string]bool{"": true, "exec": true, "e": true, "review": true, "resume": true, "fork": true}

// codexOwnedConfig are the -c keys whose value the routing needs: the variables a command gets
// (the default passes Codex's whole environment, its API key too, into the sandbox) and
// OpenWorker's MCP server.
var codexOwnedConfig = []string{"shell_environment_policy", "mcp_servers.openworker", "sandbox_mode", "sandbox_workspace_write"}

// MCPTokenVar is the variable that carries the MCP server's token to a host that reads it
// from its environment (Codex's bearer_token_env_var).
const MCPTokenVar = "OPENWORKER_MCP_TOKEN"

func launchCodex(r Routing, hostArgs []string) (Launch, error) {
	if r.Executor == "" {
		return Launch{}, errors.New("codex needs its executor's address (CODEX_EXEC_SERVER_URL)")
	}
	args := []string{
		// Codex's own sandbox would run bwrap or Seatbelt inside the wall, which is the
		// sandbox here, and ask for approvals that nothing outside could grant anyway.
		"--dangerously-bypass-approvals-and-sandbox",
		// A command gets the executor's variables, which are the session's (its proxy among
		// them), not Codex's (its API key among them): the executor applies the policy.
		"-c", "shell_environment_policy.inherit=all",
	}
	if interactive, _ := checkCodexArgs(hostArgs); interactive {
		// The interactive Codex would otherwise hand the run to a shared background
		// server of its own, which CODEX_EXEC_SERVER_URL does not reach.
		args = append(args, "--no-daemon")
	}
	env := []string{"CODEX_EXEC_SERVER_URL=" + r.Executor}
	if r.MCP.URL != "" {
		args = append(args,
			"-c", fmt.Sprintf("mcp_servers.openworker.url=%q", r.MCP.URL),
			"-c", `mcp_servers.openworker.bearer_token_env_var="`+MCPTokenVar+`"`,
			"-c", `mcp_servers.openworker.default_tools_approval_mode="approve"`)
		env = append(env, MCPTokenVar+"="+r.MCP.Token)
	}
	return Launch{Args: args, Env: env}, nil
}

// checkCodexArgs refuses what would take Codex's tools out of the routing: a subcommand that
// runs no agent (or runs a command outside), and -c settings the routing sets.
func checkCodexArgs(args []string) (interactive bool, err error) {
	sub := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-c" || a == "--config" {
			if i+1 < len(args) {
				if err := codexConfigOwned(args[i+1]); err != nil {
					return false, err
				}
			}
			i++
			continue
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			if err := codexConfigOwned(v); err != nil {
				return false, err
			}
			continue
		}
		if v, ok := strings.CutPrefix(a, "-c"); ok && v != "" {
			if err := codexConfigOwned(v); err != nil {
				return false, err
			}
			continue
		}
		if sub == "" && !strings.HasPrefix(a, "-") {
			sub = a
			if !codexSubcommands[sub] {
				// A prompt for the interactive Codex is not a subcommand either.
				if strings.ContainsAny(sub, " \t\n") || !isCodexCommand(sub) {
					sub = ""
					break
				}
				return false, fmt.Errorf("codex %s runs no agent (or runs a command outside the sandbox); run it as codex itself", sub)
			}
			break
		}
	}
	return sub == "" || sub == "resume" || sub == "fork", nil
}

func codexConfigOwned(kv string) error {
	key, _, _ := strings.Cut(kv, "=")
	key = strings.TrimSpace(key)
	for _, o := range codexOwnedConfig {
		if key == o || strings.HasPrefix(key, o+".") {
			return fmt.Errorf("codex -c %s: openworker agent sets it itself, to keep Codex's tools and their variables in the sandbox; leave it out", key)
		}
	}
	return nil
}

// isCodexCommand says whether word is one of Codex's subcommands.
func isCodexCommand(word string) bool {
	switch word {
	case "agents", "login", "logout", "mcp", "plugin", "app-server", "remote-control", "completion", "update", "doctor",
		"sandbox", "debug", "apply", "a", "queue", "archive", "delete", "migrate-rollouts", "migrate-nfs-db", "unarchive",
		"cloud", "exec-server", "features", "help", "mcp-server":
		return true
	}
	return false
}
